/**
 * `ObjectGuard`: the delete/keep protocol that orders deletes, puts and pins of one address.
 *
 * The race this file closes: a DELETE (or any garbage collection) of address X running while a
 * PUT of the same bytes finishes, or while a pin of X lands. A delete that unlinks X after the
 * store committed the put's copy but before the put is acknowledged would lose an acknowledged
 * write.
 *
 * The protocol, run on the single JS thread (so every check-then-act below is atomic between
 * awaits):
 * - A PUT hashes the body as it streams through; after the last byte and BEFORE the store commits,
 *   it calls {@link ObjectGuard.beginKeep} with the now-known address. If a delete of X is in
 *   progress, `beginKeep` waits for it to finish, so the store's existence check runs after the
 *   unlink and writes a fresh copy. The keep lasts until the PUT is acknowledged (`endKeep`).
 * - A delete runs in X's serial section ({@link ObjectGuard.exclusive}); it refuses with
 *   `409 Conflict` when X is pinned or a PUT currently keeps X, and otherwise publishes
 *   "deleting X" in the same synchronous turn as those checks, before its first await.
 * - A pin runs in the same serial section, so it is ordered strictly before or after a delete:
 *   before → the delete sees the pin and refuses; after → the pin sees X missing and answers 404.
 *
 * @module
 */

import { ConflictError } from '@ron/core'
import type { Address } from '@ron/core'

/** Per-address serial sections plus the keep/delete marks described above. */
export class ObjectGuard {
  readonly #tails = new Map<Address, Promise<void>>()
  readonly #keepers = new Map<Address, number>()
  readonly #deleting = new Map<Address, Promise<void>>()

  /**
   * Runs `fn` after every earlier section of `address` has finished (a per-address FIFO). Only
   * admin paths (delete, pin, repair replacement) use it; reads never wait on it.
   */
  async exclusive<T>(address: Address, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(address) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((r) => (release = r))
    const tail = prev.then(() => mine)
    this.#tails.set(address, tail)
    await prev
    try {
      return await fn()
    } finally {
      release()
      if (this.#tails.get(address) === tail) this.#tails.delete(address)
    }
  }

  /**
   * Marks `address` as about to be kept by a PUT; waits while a removal of it is in progress.
   * Pair with {@link endKeep} in a `finally`.
   */
  async beginKeep(address: Address): Promise<void> {
    this.#keepers.set(address, (this.#keepers.get(address) ?? 0) + 1)
    for (let d = this.#deleting.get(address); d !== undefined; d = this.#deleting.get(address)) await d
  }

  /** Ends a keep started by {@link beginKeep}. */
  endKeep(address: Address): void {
    const n = (this.#keepers.get(address) ?? 1) - 1
    if (n <= 0) this.#keepers.delete(address)
    else this.#keepers.set(address, n)
  }

  /** Number of PUTs currently keeping `address`. */
  keepers(address: Address): number {
    return this.#keepers.get(address) ?? 0
  }

  /**
   * Removes `address` with `remove()` unless something keeps it. Call inside {@link exclusive}.
   * The checks and the "deleting" mark happen in one synchronous turn before the first await.
   * @throws {@link ConflictError} (details `{ reason: 'pinned' | 'put_in_progress' }`)
   */
  async remove<T>(address: Address, pinned: boolean, remove: () => Promise<T>): Promise<T> {
    if (pinned) throw new ConflictError('object is pinned; unpin it first', { details: { address, reason: 'pinned' } })
    if (this.keepers(address) > 0) {
      throw new ConflictError('a put of this object is in progress', { details: { address, reason: 'put_in_progress' } })
    }
    return this.replace(address, remove)
  }

  /**
   * Runs `fn` while PUTs of `address` are held back at {@link beginKeep} (used by delete and by
   * repair's replacement of a corrupt copy). Call inside {@link exclusive}.
   */
  async replace<T>(address: Address, fn: () => Promise<T>): Promise<T> {
    let done!: () => void
    this.#deleting.set(address, new Promise<void>((r) => (done = r)))
    try {
      return await fn()
    } finally {
      this.#deleting.delete(address)
      done()
    }
  }
}
