/**
 * Issuer key epochs (SPEC.md section 5): one `current` key signs, one `next` key is already
 * published so verifiers know it before it signs, and any number of `previous` keys verify until
 * the last token they can have signed has expired. The ring is an immutable snapshot swapped
 * whole by its single writer (rotation and retirement run one at a time), so an issuance that
 * took the snapshot signs with exactly the key its header names.
 *
 * @module
 */

import type { KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MalformedError, importIssuerKey, publicKeyFromJwk, type Clock, type Jwk, type KeySource } from '@ron/core'
import { writeFileAtomic } from './file-keystore.js'
import type { KmsGuard } from './kms-guard.js'

/** Where a key stands in the rotation sequence. */
export type KeyStatus = 'next' | 'current' | 'previous'

/** One issuer key epoch. */
export interface EpochKey {
  readonly kid: string
  readonly epoch: number
  readonly status: KeyStatus
  readonly publicJwk: Jwk
  readonly publicKey: KeyObject
  /** When the key was created or imported (Unix ms). */
  readonly createdAt: number
  /** When it started signing (Unix ms). */
  readonly activatedAt?: number
  /** When it stopped signing (Unix ms). */
  readonly rotatedOutAt?: number
  /** When it stops verifying (Unix ms); set on `previous` keys. */
  readonly retiresAt?: number
}

/** The key ring at one instant. */
export interface KeyringSnapshot {
  readonly current: EpochKey
  readonly next: EpochKey
  readonly previous: readonly EpochKey[]
}

/** A JWK as passport publishes it: the key plus its epoch, status and validity window. */
export interface PublishedJwk extends Jwk {
  kid: string
  epoch: number
  status: KeyStatus
  createdAt: number
  activatedAt?: number
  rotatedOutAt?: number
  retiresAt?: number
}

/** A long-lived token (the admin token) whose key must keep verifying while it is unrevoked. */
interface LongLived {
  jti: string
  kid: string
  exp: number
}

interface Persisted {
  version: 1
  keys: Array<Omit<EpochKey, 'publicKey'>>
  longLived: LongLived[]
  /** Latest exp (JWT seconds) per kid of tokens that outlive the policy's max ttl (children of long-lived tokens). */
  maxExp?: Record<string, number>
}

/** Options of {@link Keyring.open}. */
export interface KeyringOptions {
  guard: KmsGuard
  clock: Clock
  /** Where `keyring.json` lives; absent → memory only. */
  dataDir: string | undefined
  /** ron-node's issuer key file, imported as the first epoch on first start. */
  issuerKeyFile: string | undefined
  /** Minimum verify-only window of a key that stopped signing, ms. */
  graceMs: number
  /** Clock tolerance added to retirement times, seconds. */
  toleranceSec: number
  /** The policy's current max ttl in seconds (the longest a policy token can live). */
  maxTtlSec: () => number
  /** Is this jti revoked (long-lived tokens that are revoked no longer hold their key). */
  isRevoked: (jti: string) => boolean
  /** Writes `keyring.json` durably (disk faults mapped by the caller). @default writeFileAtomic */
  writeFile?: (path: string, text: string) => Promise<void>
}

function epochOfKid(kid: string): number {
  const m = /#(\d+)$/.exec(kid)
  return m ? Number(m[1]) : 1
}

function toEpochKey(k: Omit<EpochKey, 'publicKey'>): EpochKey {
  const publicKey = publicKeyFromJwk(k.publicJwk)
  if (publicKey === undefined) throw new MalformedError(`keyring: key ${k.kid} is not an Ed25519 JWK`, { details: { field: 'keys' } })
  return Object.freeze({ ...k, publicJwk: Object.freeze({ ...k.publicJwk }), publicKey })
}

/** The key ring. @internal */
export class Keyring {
  #snap: KeyringSnapshot
  #longLived: LongLived[]
  readonly #o: KeyringOptions
  #writer: Promise<unknown> = Promise.resolve()
  /**
   * Latest `exp` (JWT seconds) signed by each key: a lowered max ttl never retires a key early.
   * Entries beyond what the max ttl covers (attenuated children of a long-lived token) are
   * persisted, so a restart does not forget them.
   */
  readonly #maxExp: Map<string, number>

  private constructor(o: KeyringOptions, snap: KeyringSnapshot, longLived: LongLived[], maxExp: Record<string, number> = {}) {
    this.#o = o
    this.#snap = snap
    this.#longLived = longLived
    this.#maxExp = new Map(Object.entries(maxExp))
  }

  /**
   * Loads the ring from `dataDir`, or creates it: epoch 1 from `issuerKeyFile` when given (else a
   * fresh key), and a `next` key, both through the KMS.
   */
  static async open(o: KeyringOptions): Promise<Keyring> {
    const file = o.dataDir === undefined ? undefined : join(o.dataDir, 'keyring.json')
    if (file !== undefined) {
      let text: string | undefined
      try {
        text = await readFile(file, 'utf8')
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
      }
      if (text !== undefined) {
        const p = JSON.parse(text) as Persisted
        const keys = p.keys.map(toEpochKey)
        const current = keys.find((k) => k.status === 'current')
        const next = keys.find((k) => k.status === 'next')
        if (current === undefined || next === undefined) throw new MalformedError('keyring.json has no current or next key', { details: { field: 'keys' } })
        return new Keyring(o, { current, next, previous: keys.filter((k) => k.status === 'previous') }, p.longLived ?? [], p.maxExp)
      }
    }
    const now = o.clock.now()
    let first
    if (o.issuerKeyFile !== undefined) {
      const key = importIssuerKey(await readFile(o.issuerKeyFile, 'utf8'))
      first = await o.guard.call('import', (s) => o.guard.kms.import(key, s))
    } else {
      first = await o.guard.call('generate', (s) => o.guard.kms.generate(1, s))
    }
    const epoch = epochOfKid(first.kid)
    const nextKey = await o.guard.call('generate', (s) => o.guard.kms.generate(epoch + 1, s))
    const current = toEpochKey({ kid: first.kid, epoch, status: 'current', publicJwk: first.publicJwk, createdAt: now, activatedAt: now })
    const next = toEpochKey({ kid: nextKey.kid, epoch: epoch + 1, status: 'next', publicJwk: nextKey.publicJwk, createdAt: now })
    const ring = new Keyring(o, { current, next, previous: [] }, [])
    await ring.#persist()
    return ring
  }

  /** The current snapshot (immutable). */
  get snapshot(): KeyringSnapshot {
    return this.#snap
  }

  /** Keys that verify now: current, next, and previous keys not yet retired. */
  verifying(now = this.#o.clock.now()): EpochKey[] {
    const s = this.#snap
    return [s.current, s.next, ...s.previous.filter((k) => k.retiresAt === undefined || now < k.retiresAt)]
  }

  /** A {@link KeySource} over the verifying keys (passport verifies its own tokens with it). */
  readonly keySource: KeySource = {
    getKey: (kid) => Promise.resolve(this.#verifyingKey(kid)),
  }

  /** The public key of `kid` if it verifies now: {@link Keyring.verifying} without its arrays (asked on every verification). */
  #verifyingKey(kid: string): EpochKey['publicKey'] | undefined {
    const s = this.#snap
    if (s.current.kid === kid) return s.current.publicKey
    if (s.next.kid === kid) return s.next.publicKey
    if (s.previous.length === 0) return undefined
    const now = this.#o.clock.now()
    for (const k of s.previous) {
      if (k.kid === kid && (k.retiresAt === undefined || now < k.retiresAt)) return k.publicKey
    }
    return undefined
  }

  /** The published key set: every verifying key with epoch, status and validity window. */
  jwks(): { keys: PublishedJwk[] } {
    return {
      keys: this.verifying().map((k) => {
        const j: PublishedJwk = { ...k.publicJwk, kid: k.kid, epoch: k.epoch, status: k.status, createdAt: k.createdAt }
        if (k.activatedAt !== undefined) j.activatedAt = k.activatedAt
        if (k.rotatedOutAt !== undefined) j.rotatedOutAt = k.rotatedOutAt
        if (k.retiresAt !== undefined) j.retiresAt = k.retiresAt
        return j
      }),
    }
  }

  /**
   * Records that `kid` signed a token expiring at `exp`. Resolves at once, unless `exp` lies beyond
   * what the policy's max ttl keeps the key for: then once that is on disk.
   */
  async noteSigned(kid: string, exp: number): Promise<void> {
    if (exp <= (this.#maxExp.get(kid) ?? -Infinity)) return
    this.#maxExp.set(kid, exp)
    const longLived = exp * 1000 > this.#o.clock.now() + this.#o.maxTtlSec() * 1000 + this.#o.guard.timeoutMs
    if (longLived && this.#o.dataDir !== undefined) {
      await this.#serial(async () => {
        this.#retirements()
        await this.#persist()
      })
    } else if (kid !== this.#snap.current.kid) {
      // A token signed by a key that already stopped signing (an issuance that took the snapshot
      // just before a rotation) may push its retirement out.
      void this.refresh().catch(() => undefined)
    }
  }

  /** Records a long-lived token (above the policy's max ttl): its key verifies until it expires or is revoked. */
  async noteLongLived(jti: string, kid: string, exp: number): Promise<void> {
    await this.#serial(async () => {
      this.#longLived = [...this.#longLived.filter((t) => t.exp * 1000 > this.#o.clock.now()), { jti, kid, exp }]
      await this.#persist()
    })
  }

  /**
   * Rotation: a new `next` key is generated first (the slow, fallible part, outside the swap);
   * then in one swap `next` becomes `current` and the old `current` becomes `previous` with its
   * retirement time. Rotations run one at a time.
   */
  rotate(): Promise<KeyringSnapshot> {
    return this.#serial(async () => {
      const s = this.#snap
      const created = await this.#o.guard.call('generate', (sig) => this.#o.guard.kms.generate(s.next.epoch + 1, sig))
      const now = this.#o.clock.now()
      const newNext = toEpochKey({ kid: created.kid, epoch: s.next.epoch + 1, status: 'next', publicJwk: created.publicJwk, createdAt: now })
      const current = toEpochKey({ ...s.next, status: 'current', activatedAt: now })
      const old = toEpochKey({ ...s.current, status: 'previous', rotatedOutAt: now })
      this.#snap = Object.freeze({ current, next: newNext, previous: Object.freeze([...s.previous, old]) })
      this.#retirements()
      try {
        await this.#persist()
      } catch (e) {
        // Not on disk, not in force: the old key keeps signing (the new `next` key file is
        // harmless, the next rotation generates another).
        this.#snap = s
        throw e
      }
      return this.#snap
    })
  }

  /** Recomputes retirement times (after a long-lived token was revoked, or the policy changed). */
  refresh(): Promise<void> {
    return this.#serial(async () => {
      if (this.#retirements()) await this.#persist()
    })
  }

  /** Drops previous keys past their retirement from the ring and the KMS. Returns the retired kids. */
  prune(): Promise<string[]> {
    return this.#serial(async () => {
      const now = this.#o.clock.now()
      const s = this.#snap
      const gone = s.previous.filter((k) => k.retiresAt !== undefined && now >= k.retiresAt)
      if (gone.length === 0) return []
      this.#snap = Object.freeze({ ...s, previous: Object.freeze(s.previous.filter((k) => !gone.includes(k))) })
      for (const k of gone) this.#maxExp.delete(k.kid)
      await this.#persist()
      for (const k of gone) await this.#o.guard.call('destroy', (sig) => this.#o.guard.kms.destroy(k.kid, sig))
      return gone.map((k) => k.kid)
    })
  }

  // A previous key verifies until: its grace window has passed, every policy token it can have
  // signed has expired (max ttl after it stopped signing, plus the KMS deadline of an issuance
  // that took the old snapshot just before the swap), and every unrevoked long-lived token it
  // signed has expired; plus the clock tolerance.
  #retirements(): boolean {
    const o = this.#o
    const tol = o.toleranceSec * 1000
    let changed = false
    const previous = this.#snap.previous.map((k) => {
      const out = k.rotatedOutAt ?? o.clock.now()
      let until = Math.max(out + o.graceMs, out + o.guard.timeoutMs + o.maxTtlSec() * 1000, (this.#maxExp.get(k.kid) ?? 0) * 1000) + tol
      for (const t of this.#longLived) {
        if (t.kid === k.kid && !o.isRevoked(t.jti)) until = Math.max(until, t.exp * 1000 + tol)
      }
      if (until === k.retiresAt) return k
      changed = true
      return toEpochKey({ ...k, retiresAt: until })
    })
    if (changed) this.#snap = Object.freeze({ ...this.#snap, previous: Object.freeze(previous) })
    return changed
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#writer.then(fn, fn)
    this.#writer = run.catch(() => undefined)
    return run
  }

  async #persist(): Promise<void> {
    const dir = this.#o.dataDir
    if (dir === undefined) return
    const s = this.#snap
    const strip = ({ publicKey: _pk, ...rest }: EpochKey): Omit<EpochKey, 'publicKey'> => rest
    // Only what outlives the max ttl needs to survive a restart (the rest is covered by the max ttl).
    const horizonSec = (this.#o.clock.now() + this.#o.maxTtlSec() * 1000 + this.#o.guard.timeoutMs) / 1000
    const maxExp = Object.fromEntries([...this.#maxExp].filter(([, exp]) => exp > horizonSec))
    const body: Persisted = { version: 1, keys: [s.current, s.next, ...s.previous].map(strip), longLived: this.#longLived, maxExp }
    const path = join(dir, 'keyring.json')
    const text = `${JSON.stringify(body, null, 2)}\n`
    await (this.#o.writeFile === undefined ? writeFileAtomic(path, text, dir) : this.#o.writeFile(path, text))
  }
}
