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
 * @module
 */

import type { Clock, Logger } from '@ron/core'
import { formatCheckpoint, signNote, treeHashLine, type NoteSigner } from './checkpoint.js'
import type { RegistryLog } from './log.js'

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
}

/** Keeps the latest signed checkpoint and its cosignatures. */
export class Notary {
  readonly #o: NotaryOptions
  #latest: SignedCheckpoint
  /** Cosignature lines on the latest checkpoint, by witness name. */
  #cosignatures = new Map<string, string>()
  #served: string
  readonly #listeners = new Set<(e: NotaryEvent) => void>()

  constructor(o: NotaryOptions) {
    this.#o = o
    this.#latest = this.sign(o.log.tree.size)
    this.#served = this.#latest.note
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
    const size = this.#o.log.tree.size
    if (size === this.#latest.treeSize) return
    try {
      this.#latest = this.sign(size)
    } catch (e) {
      this.#o.logger.error({ err: e, size }, 'signing the checkpoint failed')
      return
    }
    this.#cosignatures = new Map()
    this.#served = this.#latest.note
    this.#emit({ kind: 'signed', checkpoint: this.#latest })
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
