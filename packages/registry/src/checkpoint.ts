/**
 * Checkpoints as C2SP signed notes (https://c2sp.org/signed-note, https://c2sp.org/tlog-checkpoint):
 *
 * ```
 * <origin>
 * <tree size>
 * <root hash, base64>
 * [extension lines]
 *
 * — <key name> <base64(4-byte key id || Ed25519 signature)>
 * ```
 *
 * The log signs with its own Ed25519 key (kept apart from the approval signers); witnesses may add
 * cosignature lines, which parsing keeps and verification of the log signature ignores.
 *
 * @module
 */

import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { generateEd25519KeyPair } from '@ron/core'
import { rawPublicKey } from './signers.js'

/** The body of a checkpoint. */
export interface Checkpoint {
  origin: string
  treeSize: number
  rootHash: Uint8Array
  /** Optional extension lines (no empty lines). */
  extensions?: string[]
}

/**
 * The extension line a checkpoint states its tree hash in: `tree-hash sha256` (RFC 6962 as
 * C2SP tlog-tiles defines it) or `tree-hash blake3` (logs created with BLAKE3, by choice or
 * before SHA-256 became the default). A checkpoint without it is SHA-256.
 */
export const TREE_HASH_EXTENSION = 'tree-hash'

/** The extension line stating `treeHash`. */
export function treeHashLine(treeHash: 'sha256' | 'blake3'): string {
  return `${TREE_HASH_EXTENSION} ${treeHash}`
}

/**
 * The tree hash a checkpoint states (`sha256` when it states none).
 * @throws Error when it states an unknown hash or states one twice
 */
export function checkpointTreeHash(cp: Checkpoint): 'sha256' | 'blake3' {
  const lines = (cp.extensions ?? []).filter((e) => e.startsWith(`${TREE_HASH_EXTENSION} `))
  if (lines.length > 1) throw new Error('checkpoint states its tree hash twice')
  if (lines.length === 0) return 'sha256'
  const name = lines[0]!.slice(TREE_HASH_EXTENSION.length + 1)
  if (name !== 'sha256' && name !== 'blake3') throw new Error(`checkpoint states an unknown tree hash '${name}'`)
  return name
}

/** One signature line of a note. */
export interface NoteSignature {
  name: string
  /** 4-byte key id. */
  keyId: Uint8Array
  /** Signature bytes (after the key id). */
  signature: Uint8Array
}

/** A parsed note. */
export interface Note {
  /** The signed text, ending in a newline. */
  text: string
  signatures: NoteSignature[]
}

/** An Ed25519 note signer (the log key). */
export interface NoteSigner {
  readonly name: string
  readonly keyId: Uint8Array
  readonly publicKey: Uint8Array
  readonly privateKey: KeyObject
  /** The C2SP verifier key string `name+hex(keyId)+base64(0x01 || publicKey)`. */
  readonly verifierKey: string
}

const ED25519 = 0x01
const EM_DASH_PREFIX = '\u2014 '

function checkName(name: string): void {
  if (name.length === 0 || /[\s+]/u.test(name)) throw new Error(`invalid note key name '${name}'`)
}

/** The C2SP key id: the first 4 bytes of SHA-256(name || "\n" || 0x01 || publicKey). */
export function noteKeyId(name: string, publicKey: Uint8Array): Uint8Array {
  const h = createHash('sha256')
  h.update(Buffer.from(`${name}\n`, 'utf8'))
  h.update(Uint8Array.of(ED25519))
  h.update(publicKey)
  return h.digest().subarray(0, 4)
}

/** A note signer from an Ed25519 private key. */
export function noteSigner(name: string, privateKey: KeyObject): NoteSigner {
  checkName(name)
  const publicKey = Buffer.from(rawPublicKey(privateKey), 'base64url')
  const keyId = noteKeyId(name, publicKey)
  const verifierKey = `${name}+${Buffer.from(keyId).toString('hex')}+${Buffer.concat([Uint8Array.of(ED25519), publicKey]).toString('base64')}`
  return { name, keyId, publicKey, privateKey, verifierKey }
}

/** Generates an Ed25519 log key. */
export function generateLogKey(): KeyObject {
  return generateEd25519KeyPair().privateKey
}

/** A parsed verifier key. */
export interface NoteVerifier {
  name: string
  keyId: Uint8Array
  publicKey: KeyObject
}

/** Parses a C2SP verifier key `name+hex(keyId)+base64(0x01 || key)`. @throws Error when malformed */
export function parseVerifierKey(vkey: string): NoteVerifier {
  // The key's base64 may itself contain '+': split at the first two only.
  const m = /^([^+]+)\+([^+]+)\+(.+)$/.exec(vkey)
  if (m === null) throw new Error('verifier key must be name+keyid+key')
  const [, name, idHex, keyB64] = m as unknown as [string, string, string, string]
  checkName(name)
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new Error('verifier key id must be 8 hex digits')
  const key = Buffer.from(keyB64, 'base64')
  if (key.length !== 33 || key[0] !== ED25519) throw new Error('verifier key must be an Ed25519 key')
  const raw = key.subarray(1)
  const keyId = Buffer.from(idHex, 'hex')
  if (Buffer.compare(noteKeyId(name, raw), keyId) !== 0) throw new Error('verifier key id does not match its key')
  return { name, keyId, publicKey: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' }) }
}

/** The note text of a checkpoint body. @throws Error for an origin or extension that breaks the format */
export function formatCheckpoint(cp: Checkpoint): string {
  if (cp.origin.length === 0 || cp.origin.includes('\n')) throw new Error('checkpoint origin must be one non-empty line')
  for (const e of cp.extensions ?? []) if (e.length === 0 || e.includes('\n')) throw new Error('extension lines must be non-empty single lines')
  const lines = [cp.origin, String(cp.treeSize), Buffer.from(cp.rootHash).toString('base64'), ...(cp.extensions ?? [])]
  return `${lines.join('\n')}\n`
}

/** Signs `text` (ending in a newline) and returns the whole note. */
export function signNote(text: string, signer: NoteSigner): string {
  const sig = sign(null, Buffer.from(text, 'utf8'), signer.privateKey)
  return `${text}\n${signatureLine(signer.name, signer.keyId, sig)}`
}

/** One signature line (with its newline). */
export function signatureLine(name: string, keyId: Uint8Array, signature: Uint8Array): string {
  return `${EM_DASH_PREFIX}${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`
}

/** Appends a cosignature line (e.g. a witness's) to a signed note. */
export function addCosignature(note: string, line: string): string {
  if (!line.startsWith(EM_DASH_PREFIX) || !line.endsWith('\n') || line.indexOf('\n') !== line.length - 1) throw new Error('not a signature line')
  return note + line
}

/**
 * Parses a signed note. @throws Error when the text is not a note (no blank line before the
 * signatures, a malformed signature line, no signature, more than 100 signatures).
 */
export function parseNote(note: string): Note {
  const sep = note.lastIndexOf('\n\n')
  if (sep === -1) throw new Error('malformed note: no signature block')
  const text = note.slice(0, sep + 1)
  const block = note.slice(sep + 2)
  if (!block.endsWith('\n')) throw new Error('malformed note: signature block must end in a newline')
  const signatures: NoteSignature[] = []
  for (const line of block.slice(0, -1).split('\n')) {
    if (!line.startsWith(EM_DASH_PREFIX)) throw new Error('malformed note: bad signature line')
    const rest = line.slice(EM_DASH_PREFIX.length)
    const sp = rest.indexOf(' ')
    if (sp <= 0) throw new Error('malformed note: bad signature line')
    const name = rest.slice(0, sp)
    const b64 = rest.slice(sp + 1)
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new Error('malformed note: signature is not base64')
    const raw = Buffer.from(b64, 'base64')
    if (raw.length < 5) throw new Error('malformed note: signature too short')
    signatures.push({ name, keyId: raw.subarray(0, 4), signature: raw.subarray(4) })
  }
  if (signatures.length === 0) throw new Error('malformed note: no signatures')
  if (signatures.length > 100) throw new Error('malformed note: too many signatures')
  // eslint-disable-next-line no-control-regex -- the note format forbids control characters
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text)) throw new Error('malformed note: control characters in the text')
  return { text, signatures }
}

/**
 * Verifies a note's signature by `vkey` and returns the note. As C2SP signed-note and Go's
 * `note.Open` require, every signature line whose key name and key id match the trusted key must
 * verify: one that fails rejects the whole note, even when another line by that key verifies.
 * Lines of other keys are ignored.
 * @throws Error when a signature by that key fails, or when there is none
 */
export function verifyNote(note: string, vkey: string | NoteVerifier): Note {
  const v = typeof vkey === 'string' ? parseVerifierKey(vkey) : vkey
  const parsed = parseNote(note)
  const text = Buffer.from(parsed.text, 'utf8')
  let verified = 0
  for (const s of parsed.signatures) {
    if (s.name !== v.name || Buffer.compare(s.keyId, v.keyId) !== 0) continue
    if (s.signature.length !== 64 || !verify(null, text, v.publicKey, s.signature)) throw new Error(`note has an invalid signature by ${v.name}`)
    verified++
  }
  if (verified === 0) throw new Error(`note has no signature by ${v.name}`)
  return parsed
}

/** Parses a checkpoint body (the text of a note). @throws Error when malformed */
export function parseCheckpoint(text: string): Checkpoint {
  if (!text.endsWith('\n')) throw new Error('checkpoint must end in a newline')
  const lines = text.slice(0, -1).split('\n')
  if (lines.length < 3) throw new Error('checkpoint needs origin, size and root lines')
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]]
  if (origin.length === 0) throw new Error('checkpoint origin is empty')
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size)) throw new Error('checkpoint tree size is not a decimal number')
  const rootHash = Buffer.from(root, 'base64')
  if (rootHash.length !== 32 || rootHash.toString('base64') !== root) throw new Error('checkpoint root is not a base64 32-byte hash')
  if (extensions.some((e) => e.length === 0)) throw new Error('checkpoint has an empty extension line')
  const cp: Checkpoint = { origin, treeSize: Number(size), rootHash }
  if (extensions.length > 0) cp.extensions = extensions
  return cp
}

/** Signs a checkpoint with the log key: the note text. */
export function signCheckpoint(cp: Checkpoint, signer: NoteSigner): string {
  return signNote(formatCheckpoint(cp), signer)
}

/**
 * Verifies a signed checkpoint by the log key and returns its body.
 * @throws Error when the signature or the body does not verify
 */
export function verifyCheckpoint(note: string, vkey: string | NoteVerifier): Checkpoint {
  return parseCheckpoint(verifyNote(note, vkey).text)
}
