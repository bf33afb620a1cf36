/**
 * Signed name records (SPEC §6a "Signed name records"). Without etcd a name has a home: the node
 * where it was created. The home keeps the binding as `{name, manifestAddress, seq, node,
 * signedAt, sig}` (a delete: the same record with `manifestAddress: null`, a tombstone), `seq`
 * counting the home's writes of that name, and `sig` the Ed25519 signature by the home's node key
 * over `"ron:name:v1\n"` followed by the RFC 8785 canonical JSON of the other five fields. Another
 * node believes a record only when it verifies under the key it pinned for `node`.
 *
 * @module
 */

import { z } from 'zod'
import { addressSchema, canonicalJson, isNodeId, nameSchema, verifyNodeSignature } from '@ron/core'
import type { Address, NodeDirectory, NodeIdentity } from '@ron/core'

/** The domain-separation prefix of the signed bytes. */
export const NAME_RECORD_DOMAIN = 'ron:name:v1\n'

/** The signed fields of a name record. */
export interface NameRecordFields {
  name: string
  /** The manifest the name is bound to; `null` in a tombstone (the name was deleted). */
  manifestAddress: Address | null
  /** The home's write counter for this name (1 for its first write; a delete counts too). */
  seq: number
  /** The home node's id (`n` + 16 hex). */
  node: string
  /** When the home signed the record, Unix ms. */
  signedAt: number
}

/** A signed name record: the fields and `sig`, base64url of the 64-byte Ed25519 signature. */
export interface SignedNameRecord extends NameRecordFields {
  sig: string
}

/**
 * A name record as the home keeps it: the fields, which are all the signature depends on
 * (Ed25519 is deterministic), and `sig` only in records kept before the home signed on serve (and
 * in a store a cluster shares, whose records are signed by the node that wrote them). The home
 * signs the rest when it first serves them ({@link RecordSigner}), byte for byte the record it
 * would have signed at the write.
 */
export interface StoredNameRecord extends NameRecordFields {
  sig?: string | undefined
}

/** The wire schema of a signed name record (strict: a record with extra fields is refused). */
export const signedNameRecordSchema = z.strictObject({
  name: nameSchema,
  manifestAddress: addressSchema.nullable(),
  seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  node: z.string().refine(isNodeId, 'expected a node id (n + 16 hex)'),
  signedAt: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  sig: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'expected a base64url Ed25519 signature'),
})

const enc = new TextEncoder()

/**
 * The exact bytes a name record's signature covers: `"ron:name:v1\n"` + the RFC 8785 canonical
 * JSON of `{manifestAddress, name, node, seq, signedAt}` (members sorted, no whitespace).
 * @example
 * ```ts
 * new TextDecoder().decode(nameRecordBytes({ name: 'docs.alice', manifestAddress: null, seq: 2, node: 'n0123456789abcdef', signedAt: 1 }))
 * // 'ron:name:v1\n{"manifestAddress":null,"name":"docs.alice","node":"n0123456789abcdef","seq":2,"signedAt":1}'
 * ```
 */
export function nameRecordBytes(f: NameRecordFields): Uint8Array {
  const fields = { name: f.name, manifestAddress: f.manifestAddress, seq: f.seq, node: f.node, signedAt: f.signedAt }
  return enc.encode(NAME_RECORD_DOMAIN + canonicalJson(fields))
}

/** Signs `fields` with this node's key. `fields.node` must be the identity's id. */
export function signNameRecord(identity: NodeIdentity, fields: NameRecordFields): SignedNameRecord {
  const record = { name: fields.name, manifestAddress: fields.manifestAddress, seq: fields.seq, node: fields.node, signedAt: fields.signedAt }
  return { ...record, sig: Buffer.from(identity.sign(nameRecordBytes(record))).toString('base64url') }
}

/** Records kept signed by a {@link RecordSigner} by default: ten full pages of `GET /names`. */
export const SIGNED_RECORDS_MAX = 10_000

/**
 * Signs the records of names homed on this node as they are served, and keeps the last
 * `max` signed (most recently served last), at most one per name: serving a record again costs
 * no signature until its name is written again. It signs only as its own node (the record's
 * `node` is the identity's id, whatever the caller kept), so no record claims a key this node
 * does not hold.
 */
export class RecordSigner {
  readonly #identity: NodeIdentity
  readonly #max: number
  readonly #byName = new Map<string, SignedNameRecord>()
  /** Signatures made (for the tests: the cache is what saves them). */
  signatures = 0

  /** @param max - records kept at most (the oldest served goes first). */
  constructor(identity: NodeIdentity, max = SIGNED_RECORDS_MAX) {
    this.#identity = identity
    this.#max = Math.max(1, max)
  }

  /** Records kept. */
  get size(): number {
    return this.#byName.size
  }

  /** The record of `name` homed here, bound to `manifestAddress` (`null`: a tombstone), signed. */
  record(name: string, manifestAddress: Address | null, seq: number, signedAt: number): SignedNameRecord {
    const kept = this.#byName.get(name)
    if (kept !== undefined) {
      this.#byName.delete(name)
      if (kept.manifestAddress === manifestAddress && kept.seq === seq && kept.signedAt === signedAt) {
        this.#byName.set(name, kept)
        return kept
      }
    }
    const signed = signNameRecord(this.#identity, { name, manifestAddress, seq, node: this.#identity.id, signedAt })
    this.signatures++
    if (this.#byName.size >= this.#max) this.#byName.delete(this.#byName.keys().next().value!)
    this.#byName.set(name, signed)
    return signed
  }

  /**
   * The record to serve for one this node kept: as kept when it was kept signed, otherwise signed
   * now by this node (a record kept for another node id is re-homed here, as the start's migration
   * does).
   */
  served(r: StoredNameRecord): SignedNameRecord {
    if (r.sig !== undefined) return r as SignedNameRecord
    return this.record(r.name, r.manifestAddress, r.seq, r.signedAt)
  }

  /** Drops what is kept of `name` (it was written: its next record differs). */
  forget(name: string): void {
    this.#byName.delete(name)
  }

  /** Drops everything kept. */
  clear(): void {
    this.#byName.clear()
  }
}

/**
 * Why a peer's name record was refused (`rejected_total{reason}`):
 * `name_unsigned` (no record, or not a well-formed one), `name_unknown_home` (its `node` is no
 * node this node pinned), `name_bad_signature` (it does not verify under the pinned key, or says
 * something else than the answer it came with), `name_stale` (a higher `seq` of the same home is
 * already known).
 */
export type NameRecordRejection = 'name_unsigned' | 'name_unknown_home' | 'name_bad_signature' | 'name_stale'

/** Every {@link NameRecordRejection}, for the metrics registered at zero. */
export const NAME_RECORD_REJECTIONS: readonly NameRecordRejection[] = ['name_unsigned', 'name_unknown_home', 'name_bad_signature', 'name_stale']

/**
 * Checks a record a peer sent for `name`: well-formed, about `name`, homed on a node of `nodes`,
 * signed by that node's pinned key.
 * @returns the record, or why it is refused.
 */
export function verifyNameRecord(raw: unknown, name: string, nodes: NodeDirectory | undefined): { ok: true; record: SignedNameRecord } | { ok: false; reason: NameRecordRejection } {
  const parsed = signedNameRecordSchema.safeParse(raw)
  if (!parsed.success) return { ok: false, reason: 'name_unsigned' }
  const record = parsed.data
  if (record.name !== name) return { ok: false, reason: 'name_bad_signature' }
  const home = nodes?.get(record.node)
  if (home === undefined) return { ok: false, reason: 'name_unknown_home' }
  if (!verifyNodeSignature(home.nodeKey, nameRecordBytes(record), Buffer.from(record.sig, 'base64url'))) return { ok: false, reason: 'name_bad_signature' }
  return { ok: true, record }
}
