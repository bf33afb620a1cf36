/**
 * Witness cosignatures as C2SP tlog-cosignature defines them for Ed25519
 * (https://c2sp.org/tlog-cosignature, signature type `0x04`): a note signature line
 *
 * ```
 * — <witness name> base64(key id || u64 timestamp || Ed25519 signature)
 * ```
 *
 * over `"cosignature/v1\ntime <timestamp>\n"` followed by the checkpoint's note text. A
 * cosignature says: as of that time, the witness has seen no tree of this log inconsistent with
 * this checkpoint. The key id is the first 4 bytes of SHA-256(name || "\n" || 0x04 || key), so a
 * witness key can never be mistaken for a log key (type `0x01`) of the same name.
 *
 * @module
 */

import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { parseNote, signatureLine } from './checkpoint.js'
import { rawPublicKey } from './signers.js'

/** Signature type byte of Ed25519 cosignatures (C2SP signed-note). */
export const COSIGNATURE_TYPE = 0x04
const HEADER = 'cosignature/v1'

/** A witness's signing key (its own Ed25519 key, never a log's). */
export interface Cosigner {
  readonly name: string
  readonly keyId: Uint8Array
  readonly publicKey: Uint8Array
  readonly privateKey: KeyObject
  /** The witness's verifier key, `name+hex(keyId)+base64(0x04 || publicKey)`. */
  readonly verifierKey: string
}

/** A parsed witness verifier key. */
export interface CosignerVerifier {
  readonly name: string
  readonly keyId: Uint8Array
  readonly publicKey: KeyObject
  readonly verifierKey: string
}

/** A cosignature found on a note and verified. */
export interface VerifiedCosignature {
  name: string
  /** POSIX seconds. */
  timestamp: number
}

function keyIdOf(name: string, publicKey: Uint8Array): Uint8Array {
  return createHash('sha256').update(`${name}\n`, 'utf8').update(Uint8Array.of(COSIGNATURE_TYPE)).update(publicKey).digest().subarray(0, 4)
}

function checkName(name: string): void {
  if (name.length === 0 || /[\s+]/u.test(name)) throw new Error(`invalid witness name '${name}'`)
}

/** The cosigner of a witness key. @throws Error for a name with spaces or `+` */
export function cosigner(name: string, privateKey: KeyObject): Cosigner {
  checkName(name)
  const publicKey = Buffer.from(rawPublicKey(privateKey), 'base64url')
  const keyId = keyIdOf(name, publicKey)
  const verifierKey = `${name}+${Buffer.from(keyId).toString('hex')}+${Buffer.concat([Uint8Array.of(COSIGNATURE_TYPE), publicKey]).toString('base64')}`
  return { name, keyId, publicKey, privateKey, verifierKey }
}

/**
 * Parses a witness verifier key (`name+hex(keyId)+base64(0x04 || key)`).
 * @throws Error when it is malformed, not a cosignature key, or its id does not match
 */
export function parseCosignerKey(vkey: string): CosignerVerifier {
  const m = /^([^+]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+={0,2})$/.exec(vkey)
  if (m === null) throw new Error('witness key must be name+keyid+key')
  const [, name, idHex, keyB64] = m as unknown as [string, string, string, string]
  checkName(name)
  const key = Buffer.from(keyB64, 'base64')
  if (key.length !== 33 || key[0] !== COSIGNATURE_TYPE) throw new Error('witness key must be an Ed25519 cosignature key (type 0x04)')
  const raw = key.subarray(1)
  const keyId = Buffer.from(idHex, 'hex')
  if (Buffer.compare(keyIdOf(name, raw), keyId) !== 0) throw new Error('witness key id does not match its key')
  return { name, keyId, verifierKey: vkey, publicKey: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' }) }
}

function message(text: string, timestamp: number): Buffer {
  return Buffer.from(`${HEADER}\ntime ${timestamp}\n${text}`, 'utf8')
}

/**
 * Cosigns a checkpoint's note text (ending in a newline, without signatures) at `timestamp`
 * (POSIX seconds) and returns the signature line (with its newline).
 */
export function cosign(text: string, c: Cosigner, timestamp: number): string {
  if (!Number.isSafeInteger(timestamp) || timestamp <= 0) throw new Error('a cosignature timestamp is a positive number of seconds')
  const ts = Buffer.alloc(8)
  ts.writeBigUInt64BE(BigInt(timestamp))
  const sig = sign(null, message(text, timestamp), c.privateKey)
  return signatureLine(c.name, c.keyId, Buffer.concat([ts, sig]))
}

/**
 * The cosignature of `vkey` on `note`, verified.
 * @returns `undefined` when the note carries no line of that witness
 * @throws Error when a line with the witness's name and key id does not verify (the note is
 *   then malformed, as C2SP signed-note says)
 */
export function verifyCosignature(note: string, vkey: string | CosignerVerifier): VerifiedCosignature | undefined {
  const v = typeof vkey === 'string' ? parseCosignerKey(vkey) : vkey
  const parsed = parseNote(note)
  let found: VerifiedCosignature | undefined
  for (const s of parsed.signatures) {
    if (s.name !== v.name || Buffer.compare(s.keyId, v.keyId) !== 0) continue
    if (s.signature.length !== 8 + 64) throw new Error(`cosignature by ${v.name} has the wrong length`)
    const ts = Buffer.from(s.signature.subarray(0, 8)).readBigUInt64BE()
    if (ts === 0n || ts > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`cosignature by ${v.name} has an invalid timestamp`)
    const timestamp = Number(ts)
    if (!verify(null, message(parsed.text, timestamp), v.publicKey, s.signature.subarray(8))) throw new Error(`cosignature by ${v.name} does not verify`)
    if (found === undefined || timestamp > found.timestamp) found = { name: v.name, timestamp }
  }
  return found
}
