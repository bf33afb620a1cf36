/**
 * The Notary: the log's latest signed checkpoint. The Committer asks it to sign the new tree
 * right after each append is durable and before the commit is answered, so HEAD and the latest
 * signed checkpoint never differ. Signing is one Ed25519 signature over a few lines; nothing is
 * written for it: Ed25519 signatures are deterministic (RFC 8032), so the checkpoint of a tree
 * size is a pure function of the durable log and the log key — re-signing after a restart gives
 * the same bytes, and no two different checkpoints of one size can exist. The Checkpointor
 * stores a checkpoint durably (for retention and fsck) every `checkpointIntervalMs`.
 *
 * Witness cosignatures (C2SP tlog-cosignature) collected for the latest checkpoint are served
 * with it; a new checkpoint starts without any until its witnesses answer.
 *
 * On a log shared by a cluster (SPEC §6c) only the holder of the signer lease signs: it publishes
 * each checkpoint it signs, and the other nodes serve the latest published one once it verifies
 * against their own tree (same size, same root, the log key's signature). While the lease changes
 * hands, commits go on and the served checkpoint lags by at most the lease TTL.
 *
 * @module
 */

import type { Clock, Logger } from '@ron/core'
import { formatCheckpoint, parseVerifierKey, signNote, treeHashLine, verifyCheckpoint, type NoteSigner } from './checkpoint.js'
import type { RegistryLog } from './log.js'
import type { CheckpointLease } from './store/shared.js'

/** A signed checkpoint of the log. */
export interface SignedCheckpoint {
  treeSize: number
  rootHash: Uint8Array
  /** The note text (origin, size, root, `tree-hash` line), ending in a newline. */
  text: string
  /** The note signed by the log key. */
  note: string
  signedAt: number
}

/** What listeners hear: a new checkpoint, or a request to refresh cosignatures of the same one. */
export type NotaryEvent = { kind: 'signed' | 'refresh'; checkpoint: SignedCheckpoint }

/** Dependencies of the {@link Notary}. */
export interface NotaryOptions {
  log: RegistryLog
  signer: NoteSigner
  clock: Clock
  logger: Logger
  /** The cluster's signer lease (a shared log): only its holder signs. @default none: this node signs every checkpoint */
  lease?: CheckpointLease
}

/** Keeps the latest signed checkpoint and its cosignatures. */
export class Notary {
  readonly #o: NotaryOptions
  #latest: SignedCheckpoint
  /** Cosignature lines on the latest checkpoint, by witness name. */
  #cosignatures = new Map<string, string>()
  #served: string
  readonly #listeners = new Set<(e: NotaryEvent) => void>()
  /** Tree size of the last checkpoint published to the cluster (lease holder), and one in flight. */
  #published = 0
  #publishing = false
  readonly #offLease: (() => void) | undefined

  constructor(o: NotaryOptions) {
    this.#o = o
    // A cluster member that does not hold the lease starts from what the holder published (an
    // older one than its tree is still a valid checkpoint of the log), or signs the genesis size.
    this.#latest = (o.lease === undefined ? undefined : this.#adoptable(o.lease.latest(), 0)) ?? this.sign(o.lease === undefined ? o.log.tree.size : 0)
    this.#served = this.#latest.note
    this.#offLease = o.lease?.onChange(() => this.advance())
  }

  /** Stops following the lease. */
  close(): void {
    this.#offLease?.()
  }

  /** A published checkpoint this node can serve: larger than `than`, within its tree, same root, signed by the log key. */
  #adoptable(p: { treeSize: number; note: string } | undefined, than: number): SignedCheckpoint | undefined {
    const { log, clock, logger } = this.#o
    if (p === undefined || p.treeSize <= than || p.treeSize > log.tree.size) return undefined
    try {
      const cp = verifyCheckpoint(p.note, parseVerifierKey(log.genesis.logKey))
      if (cp.origin !== log.origin || cp.treeSize !== p.treeSize || Buffer.from(cp.rootHash).toString('hex') !== log.rootHex(p.treeSize)) throw new Error('checkpoint does not match this tree')
      const text = p.note.slice(0, p.note.indexOf('\n\n') + 1)
      return { treeSize: p.treeSize, rootHash: cp.rootHash, text, note: p.note, signedAt: clock.now() }
    } catch (e) {
      logger.error({ err: e, treeSize: p.treeSize }, 'refusing a published checkpoint')
      return undefined
    }
  }

  /** The latest signed checkpoint (of HEAD's tree). */
  latest(): SignedCheckpoint {
    return this.#latest
  }

  /** The latest checkpoint with the cosignatures collected for it (what `GET checkpoint` serves). */
  served(): string {
    return this.#served
  }

  /** Witnesses whose cosignature the served checkpoint carries. */
  cosigners(): string[] {
    return [...this.#cosignatures.keys()]
  }

  /** Signs the checkpoint of the first `size` leaves (the same bytes every time for one size). */
  sign(size: number): SignedCheckpoint {
    const { log, signer, clock } = this.#o
    // Through the log's memo: the commit's answer asks for the same root right after.
    const rootHash = Buffer.from(log.rootHex(size), 'hex')
    const text = formatCheckpoint({ origin: log.origin, treeSize: size, rootHash, extensions: [treeHashLine(log.genesis.treeHash)] })
    return { treeSize: size, rootHash, text, note: signNote(text, signer), signedAt: clock.now() }
  }

  /**
   * Signs the current tree when it grew since the latest checkpoint (the Committer calls this
   * after each durable append). Never throws: a failure is logged and the next call retries.
   */
  advance(): void {
    const lease = this.#o.lease
    if (lease !== undefined && !lease.holding()) {
      // Not the signer: serve what the holder published, once this node's tree has it.
      const cp = this.#adoptable(lease.latest(), this.#latest.treeSize)
      if (cp !== undefined) this.#set(cp)
      return
    }
    const size = this.#o.log.tree.size
    if (size !== this.#latest.treeSize) {
      try {
        this.#set(this.sign(size))
      } catch (e) {
        this.#o.logger.error({ err: e, size }, 'signing the checkpoint failed')
        return
      }
      this.#emit({ kind: 'signed', checkpoint: this.#latest })
    }
    if (lease !== undefined) this.#publish(lease)
  }

  #set(cp: SignedCheckpoint): void {
    this.#latest = cp
    this.#cosignatures = new Map()
    this.#served = cp.note
  }

  /** Publishes the latest checkpoint to the cluster: one call at a time, the newest one each time. */
  #publish(lease: CheckpointLease): void {
    const cp = this.#latest
    if (this.#publishing || cp.treeSize <= this.#published || cp.treeSize <= (lease.latest()?.treeSize ?? 0)) return
    this.#publishing = true
    let again = false
    lease
      .publish({ treeSize: cp.treeSize, note: cp.note })
      .then(
        (stored) => {
          if (stored) this.#published = cp.treeSize
          again = stored
        },
        // Not retried in a loop: the next commit or lease change publishes again.
        (e: unknown) => this.#o.logger.warn({ err: e, treeSize: cp.treeSize }, 'could not publish the checkpoint'),
      )
      .finally(() => {
        this.#publishing = false
        // Commits that arrived meanwhile are covered by one more publish.
        if (again && lease.holding() && this.#latest.treeSize > this.#published) this.#publish(lease)
      })
  }

  /** Asks the witnesses for fresh cosignatures of the latest checkpoint (the idle re-sign). */
  refresh(): void {
    this.advance()
    this.#emit({ kind: 'refresh', checkpoint: this.#latest })
  }

  /**
   * Attaches a witness's cosignature line (already verified by the caller) to the latest
   * checkpoint; ignored when the checkpoint moved on meanwhile.
   * @returns true when attached
   */
  addCosignature(treeSize: number, witness: string, line: string): boolean {
    if (treeSize !== this.#latest.treeSize) return false
    this.#cosignatures.set(witness, line)
    this.#served = this.#latest.note + [...this.#cosignatures.values()].join('')
    return true
  }

  /** Subscribes to new checkpoints and refresh requests. @returns a disposer */
  subscribe(fn: (e: NotaryEvent) => void): () => void {
    this.#listeners.add(fn)
    return () => {
      this.#listeners.delete(fn)
    }
  }

  #emit(e: NotaryEvent): void {
    for (const fn of this.#listeners) {
      try {
        fn(e)
      } catch (err) {
        this.#o.logger.error({ err }, 'checkpoint listener failed')
      }
    }
  }
}
