import { createHmac, sign } from 'node:crypto'
import type { IssuerKey } from '../../src/auth/index.js'

export const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

/** Builds a compact JWS with arbitrary header and claims, signed with `key` (EdDSA) unless `sig` is given. */
export function craft(header: unknown, claims: unknown, key?: IssuerKey, sig?: string): string {
  const input = `${b64(header)}.${b64(claims)}`
  const s = sig ?? (key ? sign(null, Buffer.from(input), key.privateKey).toString('base64url') : '')
  return `${input}.${s}`
}

export function hs256(header: unknown, claims: unknown, secret: Uint8Array | string): string {
  const input = `${b64(header)}.${b64(claims)}`
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
}

/** Catches the rejection of `p` (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<{ code: string; details: Record<string, unknown>; name: string }> {
  try {
    await p
  } catch (e) {
    return e as { code: string; details: Record<string, unknown>; name: string }
  }
  throw new Error('expected a rejection')
}
