/**
 * `PinSet`: the pinned addresses of a node, persisted crash-safely in `meta/pins.json` (or kept in
 * memory without a data directory). Pins, deletes and puts of one address are ordered by
 * {@link ObjectGuard} (`object-guard.ts`): a pin lands strictly before a delete (which then
 * refuses) or after it (the pin answers 404).
 *
 * @module
 */

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
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

