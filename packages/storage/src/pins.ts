/**
 * Pins and the delete/keep protocol.
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

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ConflictError } from '@ron/core'
import type { Address } from '@ron/core'
import { fsyncDir } from './store/fs-layout.js'

/**
 * The set of pinned addresses, persisted as JSON under `dir` (fs backend) or kept in memory.
 *
 * Changes are durable before they are visible: {@link PinSet.add} and {@link PinSet.remove} write
 * the new snapshot (temp file with fsync, rename, fsync of the directory) and only then change the
 * in-memory set, so a failed write leaves memory as it was and a retry writes again.
 */
export class PinSet {
  #pins = new Set<Address>()
  readonly #file: string | undefined
  #writing: Promise<unknown> = Promise.resolve()

  private constructor(file: string | undefined) {
    this.#file = file
  }

  /**
   * Loads the pins stored under `dir` (`pins.json`), or an empty in-memory set without a dir.
   * @throws when the file exists but cannot be parsed (never silently forgets pins).
   */
  static async open(dir?: string): Promise<PinSet> {
    if (dir === undefined) return new PinSet(undefined)
    const created = await mkdir(dir, { recursive: true })
    // A new directory must itself be a durable entry of its parent.
    if (created !== undefined) await fsyncDir(dirname(dir))
    const set = new PinSet(join(dir, 'pins.json'))
    try {
      const parsed = JSON.parse(await readFile(set.#file!, 'utf8')) as { pins?: unknown }
      if (Array.isArray(parsed.pins)) for (const p of parsed.pins) if (typeof p === 'string') set.#pins.add(p as Address)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    }
    return set
  }

  /** True when `address` is pinned. */
  has(address: Address): boolean {
    return this.#pins.has(address)
  }

  /** Number of pins. */
  get size(): number {
    return this.#pins.size
  }

  /** All pinned addresses (a snapshot). */
  list(): Address[] {
    return [...this.#pins]
  }

  /**
   * Pins `address`, durably, then in memory; returns false when it already was pinned.
   * @throws the write error when persisting fails; the pin is then not added (retrying is safe).
   */
  add(address: Address): Promise<boolean> {
    if (this.#pins.has(address)) return Promise.resolve(false)
    return this.#change((next) => {
      if (next.has(address)) return false
      next.add(address)
      return true
    })
  }

  /**
   * Unpins `address`, durably, then in memory; returns false when it was not pinned.
   * @throws the write error when persisting fails; the pin then stays (retrying is safe).
   */
  remove(address: Address): Promise<boolean> {
    if (!this.#pins.has(address)) return Promise.resolve(false)
    return this.#change((next) => next.delete(address))
  }

  /**
   * Applies `mutate` to a copy of the set, persists the copy and then makes it current. Changes are
   * chained, so each one starts from the latest committed set and the file always ends with the
   * latest snapshot.
   */
  #change(mutate: (next: Set<Address>) => boolean): Promise<boolean> {
    const run = async (): Promise<boolean> => {
      const next = new Set(this.#pins)
      if (!mutate(next)) return false
      if (this.#file !== undefined) await persist(this.#file, next)
      this.#pins = next
      return true
    }
    // Without a file there is nothing to wait for: apply at once (same turn, like before).
    if (this.#file === undefined) return run()
    const result = this.#writing.then(run)
    this.#writing = result.catch(() => undefined)
    return result
  }
}

/** Writes `pins` to `file` crash-safely: temp file + fsync, rename, fsync of the directory. */
async function persist(file: string, pins: Set<Address>): Promise<void> {
  const tmp = `${file}.tmp`
  await writeFile(tmp, JSON.stringify({ pins: [...pins] }), { flush: true })
  await rename(tmp, file)
  await fsyncDir(dirname(file))
}

/** Per-address serial sections plus the keep/delete marks described in the module comment. */
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
