import { ALL_SCOPES, MemoryTransport, type Claims } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createPassportClient, createPassportService, type PassportConfig } from '../src/index.js'

/** 2027-01-15, in ms. */
export const T0 = 1_800_000_000_000

export const ADMIN_POLICY = { callers: { admin: { scopes: ['*'], audiences: ['*'] } } }

/** A passport on a MemoryTransport with virtual time, an admin token and a client. */
export async function setup(config: PassportConfig = {}) {
  const clock = new VirtualClock(T0)
  const transport = new MemoryTransport({ clock })
  const passport = await createPassportService({ clock, policy: ADMIN_POLICY, ...config }, transport)
  transport.mount('passport', passport)
  const admin = await passport.mintAdminToken({ aud: ['passport', 'storage', 'registry', 'index', 'interop'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
  const client = createPassportClient(transport, { token: admin.token })
  const close = async (): Promise<void> => {
    await passport.close()
    await transport.close()
  }
  return { clock, transport, passport, admin, client, close }
}

/** The claims segment of a compact JWS. */
export function payloadOf(token: string): Claims & { scope: string } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Claims & { scope: string }
}

/** The header of a compact JWS. */
export function headerOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as Record<string, unknown>
}

/** Catches a rejection (fails when `p` resolves). */
export async function rejection(p: Promise<unknown>): Promise<{ code: string; status: number; details: Record<string, unknown>; message: string }> {
  try {
    await p
  } catch (e) {
    return e as { code: string; status: number; details: Record<string, unknown>; message: string }
  }
  throw new Error('expected a rejection')
}
