/**
 * Whether passport's data directory takes writes (SPEC.md §4: a local disk fault is 503
 * `NotReady` with `disk_full`, `io_error` or `read_only`). Every local write of passport —
 * revocations, parent links, the key ring, keys, enrolled nodes — reports here: a disk fault turns
 * the write paths unready, the next successful write (or the probe, which writes and fsyncs a
 * small file while the disk is faulty) turns them ready again. Nothing here ever exits.
 *
 * @module
 */

import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { diskFaultReason, isRonError, toDiskFault, type DiskFaultReason } from '@ron/core'
import { writeFileAtomic } from './file-keystore.js'

/** The disk-fault reason of `e`: a raw system error, or a `NotReady` that already carries one. */
export function diskReasonOf(e: unknown): DiskFaultReason | undefined {
  if (isRonError(e, 'NotReady')) {
    const r = e.details['reason']
    return r === 'disk_full' || r === 'io_error' || r === 'read_only' ? r : undefined
  }
  return diskFaultReason(e)
}

/** Disk health of the data directory. @internal */
export class DiskHealth {
  readonly #dir: string | undefined
  readonly #onChange: (ok: boolean, reason: DiskFaultReason | undefined) => void
  #reason: DiskFaultReason | undefined

  constructor(dir: string | undefined, onChange: (ok: boolean, reason: DiskFaultReason | undefined) => void) {
    this.#dir = dir
    this.#onChange = onChange
  }

  /** False after a disk fault, until a write succeeds again. */
  get ok(): boolean {
    return this.#reason === undefined
  }

  /** The last fault's reason while not ok. */
  get reason(): DiskFaultReason | undefined {
    return this.#reason
  }

  /** Records the outcome of a write: `undefined` = it succeeded; a disk fault = the disk is faulty. Other errors say nothing about the disk. */
  note(error: unknown): void {
    if (error === undefined) return this.#set(undefined)
    const r = diskReasonOf(error)
    if (r !== undefined) this.#set(r)
  }

  /**
   * Runs a write: its disk fault becomes a 503 `NotReady` (and the disk unhealthy), its success
   * makes the disk healthy again.
   */
  async write<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let out: T
    try {
      out = await fn()
    } catch (e) {
      const mapped = toDiskFault(e, what)
      this.note(mapped)
      throw mapped
    }
    this.note(undefined)
    return out
  }

  /** Writes, fsyncs and removes a small file: true when the disk takes writes again. */
  async probe(): Promise<boolean> {
    const dir = this.#dir
    if (dir === undefined) return true
    const path = join(dir, '.probe')
    try {
      await this.write('passport data directory', async () => {
        await writeFileAtomic(path, 'probe\n', dir)
        await rm(path, { force: true })
      })
      return true
    } catch {
      return false
    }
  }

  #set(reason: DiskFaultReason | undefined): void {
    if (reason === this.#reason) return
    this.#reason = reason
    this.#onChange(reason === undefined, reason)
  }
}
