/**
 * The write-back of signatures made on serve (DESIGN.md "Name records are signed when served"):
 * when the home signs a record its store keeps unsigned, the signed record is written back to the
 * store, so it is signed at most once per write, whatever the signer's memory bound, the callers
 * (`GET /names` is public) or restarts.
 *
 * The read that signed never waits for it: {@link SignatureWriteBack.keep} only queues. What one
 * synchronous step queued (a whole listing page) goes to the store at the next microtask as one
 * transaction; one transaction is in flight at a time, at most {@link WRITE_BACK_PENDING_MAX}
 * records wait (more are not kept: signed again when next served), and `close()` drops what waits
 * and awaits what is in flight. The store lands a record only if its name still holds exactly its
 * fields unsigned ({@link NameStore.keepSigned}): a write between the signature and the write-back
 * wins. A failed write-back is logged and counted (`index_record_writebacks_total`), never
 * surfaced to the reader, and changes no readiness: the next serve signs and writes back again.
 *
 * @module
 */

import type { SignedNameRecord } from './name-record.js'
import type { NameStore } from './store/types.js'

/** Records waiting for a write-back at most: one signer's worth. */
export const WRITE_BACK_PENDING_MAX = 10_000
/** Records per write-back transaction at most: one full `GET /names` page. */
export const WRITE_BACK_BATCH_MAX = 1000

/** What a {@link SignatureWriteBack} needs. */
export interface WriteBackDeps {
  store: Pick<NameStore, 'keepSigned'>
  /** While true (a disk fault keeps name writes unready) nothing is queued: the probe decides when the disk takes writes again. */
  paused(): boolean
  /** A write-back the store refused (`records`: how many it carried). */
  failed(e: unknown, records: number): void
  /** Counts records by what became of them (`index_record_writebacks_total{result}`). */
  counted(result: WriteBackResult, records: number): void
}

/** What became of a record queued for a write-back. */
export type WriteBackResult = 'landed' | 'stale' | 'failed' | 'dropped'

/** Queues and writes back signed records; owned by the index service (closed before its store). */
export class SignatureWriteBack {
  readonly #d: WriteBackDeps
  readonly #pending = new Map<string, SignedNameRecord>()
  /** The records of the transaction in flight, by name. */
  #landing = new Map<string, SignedNameRecord>()
  #inFlight: Promise<void> | undefined
  #scheduled = false
  #closed = false
  /** Records written back. */
  landed = 0
  /** Records the store dropped (their name was written since). */
  stale = 0
  /** Records not queued (too many waiting) or lost in a failed write-back. */
  lost = 0
  /** Write-back transactions that failed. */
  failures = 0

  constructor(deps: WriteBackDeps) {
    this.#d = deps
  }

  /** Queues `record` (just signed for a record the store keeps unsigned) to be written back. */
  keep(record: SignedNameRecord): void {
    if (this.#closed || this.#d.store.keepSigned === undefined || this.#d.paused()) return
    const name = record.name
    if (this.#landing.get(name) === record || this.#pending.get(name) === record) return
    if (this.#pending.size >= WRITE_BACK_PENDING_MAX && !this.#pending.has(name)) {
      this.lost++
      this.#d.counted('dropped', 1)
      return
    }
    this.#pending.set(name, record)
    if (!this.#scheduled && this.#inFlight === undefined) {
      this.#scheduled = true
      queueMicrotask(() => {
        this.#scheduled = false
        this.#flush()
      })
    }
  }

  /** Records waiting (not yet in flight). */
  get pending(): number {
    return this.#pending.size
  }

  /** Settles once nothing waits and nothing is in flight. */
  async idle(): Promise<void> {
    while (this.#inFlight !== undefined || (this.#pending.size > 0 && !this.#closed)) {
      if (this.#inFlight === undefined) this.#flush()
      await this.#inFlight
    }
  }

  /** Drops what waits and awaits the write-back in flight; queues nothing after. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    this.#pending.clear()
    while (this.#inFlight !== undefined) await this.#inFlight
  }

  #flush(): void {
    const keepSigned = this.#d.store.keepSigned
    if (this.#closed || this.#inFlight !== undefined || this.#pending.size === 0 || keepSigned === undefined) return
    const batch: SignedNameRecord[] = []
    const landing = new Map<string, SignedNameRecord>()
    for (const [name, r] of this.#pending) {
      batch.push(r)
      landing.set(name, r)
      this.#pending.delete(name)
      if (batch.length >= WRITE_BACK_BATCH_MAX) break
    }
    this.#landing = landing
    // A store that throws instead of rejecting is a failed write-back too.
    const written = new Promise<number>((resolve) => resolve(keepSigned.call(this.#d.store, batch)))
    this.#inFlight = written
      .then(
        (n) => {
          this.landed += n
          this.stale += batch.length - n
          if (n > 0) this.#d.counted('landed', n)
          if (batch.length > n) this.#d.counted('stale', batch.length - n)
        },
        (e: unknown) => {
          this.failures++
          this.lost += batch.length
          this.#d.counted('failed', batch.length)
          this.#d.failed(e, batch.length)
        },
      )
      .finally(() => {
        this.#inFlight = undefined
        this.#landing = new Map()
        this.#flush()
      })
  }
}
