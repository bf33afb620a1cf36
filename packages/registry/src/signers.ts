/**
 * Approvals: Ed25519 signatures by the signers of a signer set over a domain-separated message
 * that names the log (its origin), the base version and the payload hash, so an approval can be
 * replayed neither on another log nor on another base. Quorum counts distinct keys; a signer-set
 * change needs the threshold of the set in force and of the new set (the TUF rule).
 *
 * @module
 */

import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto'
import { ed25519Verify, generateEd25519KeyPair, isStrongEd25519Key } from '@ron/core'

export { isStrongEd25519Key }
import type { SignerSet } from './descriptors.js'

/** Domain tag that starts every approval message. */
export const APPROVAL_DOMAIN = 'ron:registry:v1'

/** One approval as it travels and as it is stored in a log entry. */
export interface Approval {
  signerId: string
  /** base64url Ed25519 signature over {@link approvalMessage}. */
  sig: string
}

/** What an approval signs. */
export interface ApprovalSubject {
  origin: string
  baseVersion: number
  payloadB3: string
}

/**
 * The exact bytes a signer signs: UTF-8 of
 * `"ron:registry:v1\n" + origin + "\n" + baseVersion + "\n" + payloadB3`.
 */
export function approvalMessage(s: ApprovalSubject): Uint8Array {
  return Buffer.from(`${APPROVAL_DOMAIN}\n${s.origin}\n${s.baseVersion}\n${s.payloadB3}`, 'utf8')
}

/** An Ed25519 signer key pair: `publicKey` is the raw 32 bytes in base64url. */
export interface SignerKey {
  readonly id: string
  readonly publicKey: string
  readonly privateKey: KeyObject
}

/** Generates a fresh Ed25519 signer key. */
export function generateSignerKey(id: string): SignerKey {
  const { privateKey, publicKey } = generateEd25519KeyPair()
  return { id, privateKey, publicKey: rawPublicKey(publicKey) }
}

/** The raw public key (base64url) of an Ed25519 key object. */
export function rawPublicKey(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' }) as { x?: string }
  if (jwk.x === undefined) throw new Error('not an Ed25519 key')
  return jwk.x
}

/** Serialises a signer key as a private JWK (`{kty, crv, x, d, kid}`) for a 0600 key file. */
export function exportSignerKey(key: SignerKey): string {
  const jwk = key.privateKey.export({ format: 'jwk' }) as Record<string, string>
  return `${JSON.stringify({ ...jwk, kid: key.id })}\n`
}

/** Reads a key written by {@link exportSignerKey}. @throws Error when the text is not an Ed25519 private JWK */
export function importSignerKey(text: string): SignerKey {
  const jwk = JSON.parse(text) as { kty?: string; crv?: string; x?: string; d?: string; kid?: string }
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.d !== 'string' || typeof jwk.x !== 'string' || typeof jwk.kid !== 'string') {
    throw new Error('not an Ed25519 private JWK with a kid')
  }
  const privateKey = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d }, format: 'jwk' })
  return { id: jwk.kid, privateKey, publicKey: rawPublicKey(privateKey) }
}

/**
 * Signs an approval for `subject` with `key`.
 *
 * @example
 * ```ts
 * const a = signApproval(key, { origin: head.origin, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })
 * await client.approve(p.proposalId, a)
 * ```
 */
export function signApproval(key: SignerKey, subject: ApprovalSubject): Approval {
  return { signerId: key.id, sig: sign(null, approvalMessage(subject), key.privateKey).toString('base64url') }
}

const keyCache = new Map<string, KeyObject | null>()

/**
 * A KeyObject for a raw base64url Ed25519 public key (cached); undefined when it is not a valid
 * key, or is a non-canonical encoding or a small-order point ({@link isStrongEd25519Key}).
 */
export function publicKeyObject(raw: string): KeyObject | undefined {
  let k = keyCache.get(raw)
  if (k !== undefined) return k ?? undefined
  try {
    const bytes = Buffer.from(raw, 'base64url')
    k = /^[A-Za-z0-9_-]{43}$/.test(raw) && isStrongEd25519Key(bytes) ? createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' }) : null
  } catch {
    k = null
  }
  if (keyCache.size > 4096) keyCache.clear()
  keyCache.set(raw, k)
  return k ?? undefined
}

// Verdicts of recent checks: a proposal's approvals are recounted on every approval, view and
// commit, and a signature's verdict over the same message never changes. Keyed by the signature
// string (whose hash V8 keeps on the string: a recount of stored approvals builds no key), each
// verdict remembering the key and subject it is for; a different key or subject is checked anew.
// Bounded.
interface Verdict {
  publicKey: string
  origin: string
  baseVersion: number
  payloadB3: string
  ok: boolean
}
const verdicts = new Map<string, Verdict>()
const VERDICTS_MAX = 8192

/** What an approval's `sig` must look like: 86 base64url characters (64 bytes, unpadded). @internal */
export const APPROVAL_SIG_PATTERN = /^[A-Za-z0-9_-]{86}$/

/** True when `sig` (base64url) is a valid Ed25519 signature by `publicKey` over the subject. */
export function verifyApprovalSig(publicKey: string, sig: string, subject: ApprovalSubject): boolean {
  return verifySig(publicKey, sig, subject, false)
}

/**
 * {@link verifyApprovalSig} for a `sig` already found to match {@link APPROVAL_SIG_PATTERN} (the
 * write routes refuse any other with 400 before the Committer sees it): the pattern is not
 * tested a second time. @internal
 */
export function verifyWellFormedApprovalSig(publicKey: string, sig: string, subject: ApprovalSubject): boolean {
  return verifySig(publicKey, sig, subject, true)
}

function verifySig(publicKey: string, sig: string, subject: ApprovalSubject, wellFormed: boolean): boolean {
  const known = verdicts.get(sig)
  if (known !== undefined && known.publicKey === publicKey && known.baseVersion === subject.baseVersion && known.payloadB3 === subject.payloadB3 && known.origin === subject.origin) {
    return known.ok
  }
  const key = publicKeyObject(publicKey)
  let ok = false
  // Core's strict check (64 bytes, node:crypto: S must be canonical), on a key that passed ours.
  if (key !== undefined && (wellFormed || APPROVAL_SIG_PATTERN.test(sig))) ok = ed25519Verify(key, approvalMessage(subject), Buffer.from(sig, 'base64url'))
  if (known === undefined && verdicts.size >= VERDICTS_MAX) verdicts.delete(verdicts.keys().next().value!)
  verdicts.set(sig, { publicKey, origin: subject.origin, baseVersion: subject.baseVersion, payloadB3: subject.payloadB3, ok })
  return ok
}

/**
 * Forgets the memoised verdicts of `approvals` (a committed proposal's: they are not recounted
 * again, and dropped now they die young instead of living on in the old generation until
 * evicted). A later check verifies afresh. @internal
 */
export function forgetVerdicts(approvals: readonly Approval[]): void {
  for (const a of approvals) verdicts.delete(a.sig)
}

/** The public key of `signerId` in `set`, if it is a member. */
export function keyOf(set: SignerSet, signerId: string): string | undefined {
  return set.signers.find((s) => s.id === signerId)?.publicKey
}

/** Progress of one set towards its threshold. */
export interface QuorumProgress {
  /** Distinct keys of the set with a valid approval. */
  have: number
  m: number
  n: number
}

/** Counts approvals that are valid for `set` (distinct keys once). */
export function countQuorum(set: SignerSet, approvals: readonly Approval[], subject: ApprovalSubject): QuorumProgress {
  // A few approvals at most: distinct keys by a scan, no Set per count.
  const keys: string[] = []
  for (const a of approvals) {
    const k = keyOf(set, a.signerId)
    if (k !== undefined && !keys.includes(k) && verifyApprovalSig(k, a.sig, subject)) keys.push(k)
  }
  return { have: keys.length, m: set.threshold, n: distinctKeys(set) }
}

/** Distinct keys of a signer set (at most 64 signers: a scan, no Set per count). */
function distinctKeys(set: SignerSet): number {
  const s = set.signers
  let n = 0
  for (let i = 0; i < s.length; i++) {
    let seen = false
    for (let j = 0; j < i && !seen; j++) seen = s[j]!.publicKey === s[i]!.publicKey
    if (!seen) n++
  }
  return n
}

/** The quorum verdict of a proposal: the set in force and, for a signer-set change, the new set. */
export interface QuorumVerdict {
  ok: boolean
  current: QuorumProgress
  next?: QuorumProgress
}

/**
 * Evaluates approvals against the set in force and, when the payload changes the signer set,
 * against the new set too (both thresholds must be met).
 */
export function evaluateQuorum(current: SignerSet, next: SignerSet | undefined, approvals: readonly Approval[], subject: ApprovalSubject): QuorumVerdict {
  const c = countQuorum(current, approvals, subject)
  if (next === undefined) return { ok: c.have >= c.m, current: c }
  const n = countQuorum(next, approvals, subject)
  return { ok: c.have >= c.m && n.have >= n.m, current: c, next: n }
}
