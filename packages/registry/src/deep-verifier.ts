/**
 * The Deep Verifier: re-reads the log from the medium and checks, in bounded slices, that every
 * held entry matches its leaf hash, its `payloadB3` and its chain link, and that every stored
 * checkpoint's root is the tree's root at that size and carries the log key's signature. A
 * mismatch turns writes unready (`integrity`) and counts `registry_integrity_failures_total`;
 * reads stay up. Each pass is timed in `audit_chain_verify_seconds`.
 *
 * @module
 */

import { abortReason } from '@ron/core'
import type { Broadcast, Clock, Logger, MetricsSink } from '@ron/core'
import type { RegistryUpdated } from './committer.js'
import { verifyCheckpoint } from './checkpoint.js'
import { payloadB3 } from './descriptors.js'
import { entryHash, type LogEntry } from './entry.js'
import { leafIsWholeEntry } from './leaf.js'
import type { RegistryLog } from './log.js'

/** What a pass found. */
export interface VerifyReport {
  ok: boolean
  /** Entries checked. */
  entries: number
  /** Checkpoints checked. */
  checkpoints: number
  problems: string[]
}

/** Dependencies of the {@link DeepVerifier}. */
export interface DeepVerifierOptions {
  log: RegistryLog
  /** Each commit is read back from the medium and checked as it happens. */
  committed?: Broadcast<RegistryUpdated>
  settings: () => { intervalMs: number; sliceEntries: number }
  clock: Clock
  metrics: MetricsSink
  logger: Logger
  /** Told the outcome of every pass. */
  onResult(ok: boolean, problems: string[]): void
}

const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r))
/** Resolves once the microtasks queued now have run (a commit's reply is written in them). */
const afterMicrotasks = (): Promise<void> => new Promise((r) => process.nextTick(r))

/** Background re-verification of the log. */
export class DeepVerifier {
  readonly #o: DeepVerifierOptions
  #tail: Promise<unknown> = Promise.resolve()
  /** The last entry {@link checkCommitted} read back and found sound. */
  #lastReadBack: { version: number; hash: string } | undefined

  constructor(o: DeepVerifierOptions) {
    this.#o = o
  }

  /** Runs one full pass now (passes are serialised). */
  verifyNow(): Promise<VerifyReport> {
    const run = this.#tail.then(() => this.#pass())
    this.#tail = run.catch(() => undefined)
    return run
  }

  async #pass(): Promise<VerifyReport> {
    const { log, metrics } = this.#o
    const started = performance.now()
    const problems: string[] = []
    const head = log.head().version
    const from = log.oldest()
    const slice = Math.max(1, this.#o.settings().sliceEntries)
    let prevHash: string | undefined = from === 1 ? log.genesisHash : undefined
    let n = 0
    for (let v = from; v <= head; v++) {
      if ((v - from) % slice === 0 && v !== from) await yieldTurn()
      let bytes: Uint8Array | undefined
      try {
        bytes = await log.store.read(v)
      } catch (e) {
        problems.push(`version ${v}: ${e instanceof Error ? e.message : String(e)}`)
        prevHash = undefined
        continue
      }
      if (bytes === undefined) {
        if (v >= log.oldest()) problems.push(`version ${v}: missing`)
        prevHash = undefined
        continue
      }
      n++
      // Bytes equal to those the log holds in memory for `v` (see checkCommitted) match the leaf
      // and are the canonical bytes of the held entry: that entry is checked instead of parsing
      // them, and its hash is theirs. Its payloadB3 is still checked.
      const written = log.cached(v)
      const same = written !== undefined && written.bytes.length === bytes.length && Buffer.compare(written.bytes, bytes) === 0
      if (!same && Buffer.compare(log.leafHash(bytes), log.tree.leafHash(v - 1)) !== 0) problems.push(`version ${v}: bytes do not match the leaf hash`)
      let e: LogEntry | undefined
      if (same) e = written.entry
      else {
        try {
          e = JSON.parse(utf8(bytes)) as LogEntry
        } catch {
          problems.push(`version ${v}: not JSON`)
        }
      }
      if (e !== undefined) {
        if (e.version !== v) problems.push(`version ${v}: entry says ${e.version}`)
        try {
          if (payloadB3(e.payload) !== e.payloadB3) problems.push(`version ${v}: payloadB3 mismatch`)
        } catch {
          problems.push(`version ${v}: payload cannot be canonicalised`)
        }
        if (prevHash !== undefined && e.prev !== prevHash) problems.push(`version ${v}: prev does not link version ${v - 1}`)
      }
      prevHash = same ? written.hash : entryHash(bytes)
    }
    let checkpoints = 0
    for (const cp of log.store.checkpoints()) {
      checkpoints++
      if (cp.treeSize > log.tree.size) {
        // A shared log's checkpoints may be ahead of what this node has followed so far.
        if (log.store.shared !== undefined) continue
        problems.push(`checkpoint ${cp.treeSize}: beyond the tree`)
        continue
      }
      if (Buffer.from(log.tree.root(cp.treeSize)).toString('hex') !== cp.root) problems.push(`checkpoint ${cp.treeSize}: root differs from the tree`)
      try {
        const body = verifyCheckpoint(cp.note, log.genesis.logKey)
        if (body.treeSize !== cp.treeSize || Buffer.from(body.rootHash).toString('hex') !== cp.root || body.origin !== log.origin) {
          problems.push(`checkpoint ${cp.treeSize}: note does not match the record`)
        }
      } catch (err) {
        problems.push(`checkpoint ${cp.treeSize}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    metrics.observe('audit_chain_verify_seconds', undefined, (performance.now() - started) / 1000)
    const ok = problems.length === 0
    if (!ok) {
      metrics.inc('registry_integrity_failures_total', undefined, problems.length)
      this.#o.logger.error({ problems: problems.slice(0, 10) }, 'deep verification found a mismatch')
    }
    this.#o.onResult(ok, problems)
    return { ok, entries: n, checkpoints, problems }
  }

  /**
   * Reads entry `version` back from the medium and checks its leaf hash and chain link. The hash
   * of the entry read back last is remembered, so following commits one by one reads each entry
   * once (the previous one is read only after a gap). `hash` is the entry hash the commit
   * announced: when the leaf is the whole entry and the bytes read back match it, they are the
   * committed bytes, whose hash that is (so it is not computed again). While the log still holds
   * the entry's bytes in memory (its recent-entry cache), bytes read back equal to them are
   * checked by that comparison: the leaf hash and the entry hash were computed from those bytes,
   * so neither is computed again and the entry is not parsed. The record is read synchronously
   * when the store can (`LogStore.readNow`: the page cache holds a record just written).
   */
  async checkCommitted(version: number, hash?: string): Promise<boolean> {
    const { log } = this.#o
    const problems: string[] = []
    try {
      // The record was just written: read it back at once when the store can (no thread-pool
      // round trip), else through `read`.
      const bytes = log.store.readNow?.(version) ?? (await log.store.read(version))
      if (bytes === undefined) return true // pruned meanwhile
      // The bytes this node appended (or took in), while the log still holds them in memory: their
      // leaf hash is the tree's and their hash the announced one (both computed from these very
      // bytes), so bytes read back equal to them match the leaf and link as they do.
      const written = log.cached(version)
      const same = written !== undefined && (hash === undefined || hash === written.hash) && written.bytes.length === bytes.length && Buffer.compare(written.bytes, bytes) === 0
      const sameLeaf = same || Buffer.compare(log.leafHash(bytes), log.tree.leafHash(version - 1)) === 0
      if (!sameLeaf) problems.push(`version ${version}: read-back differs from the leaf hash`)
      const entryPrev = same ? written.entry.prev : (JSON.parse(utf8(bytes)) as LogEntry).prev
      const last = this.#lastReadBack
      let prev: string | undefined
      if (version === 1) prev = log.genesisHash
      else if (last?.version === version - 1) prev = last.hash
      else {
        const prevBytes = await log.store.read(version - 1)
        prev = prevBytes === undefined ? undefined : entryHash(prevBytes)
      }
      if (prev !== undefined && entryPrev !== prev) problems.push(`version ${version}: prev does not link version ${version - 1}`)
      const known = hash !== undefined && sameLeaf && leafIsWholeEntry(log.leafFormat, bytes.length)
      this.#lastReadBack = problems.length === 0 ? { version, hash: same ? written.hash : known ? hash : entryHash(bytes) } : undefined
    } catch (err) {
      this.#lastReadBack = undefined
      problems.push(`version ${version}: ${err instanceof Error ? err.message : String(err)}`)
    }
    if (problems.length > 0) {
      this.#o.metrics.inc('registry_integrity_failures_total', undefined, problems.length)
      this.#o.logger.error({ problems }, 'read-back verification of a commit failed')
      this.#o.onResult(false, problems)
    }
    return problems.length === 0
  }

  /**
   * The task: follows `committed` (each commit is read back and checked) and runs a full pass
   * every `intervalMs`.
   */
  async run(signal: AbortSignal): Promise<void> {
    const clock = this.#o.clock
    const periodic = async (): Promise<void> => {
      while (!signal.aborted) {
        await clock.sleep(this.#o.settings().intervalMs, signal)
        await this.verifyNow()
      }
    }
    const follow = async (): Promise<void> => {
      const bus = this.#o.committed
      if (bus === undefined) return
      const sub = bus.subscribe()
      // One abort listener for the whole loop, which closes the subscription (a `recv(signal)`
      // per commit added and removed a listener on the signal each time: ~20k instructions).
      const onAbort = (): void => sub.close()
      signal.addEventListener('abort', onAbort, { once: true })
      try {
        while (!signal.aborted) {
          let r
          try {
            r = await sub.recv()
          } catch (e) {
            // Closed by the abort: end as a `recv(signal)` would have, with the signal's reason.
            if (signal.aborted) throw abortReason(signal)
            throw e
          }
          // After a lag, the periodic pass covers what was missed. The read-back may be
          // synchronous: it waits until the commit's reply is written.
          if ('value' in r) {
            await afterMicrotasks()
            await this.checkCommitted(r.value.version, r.value.hash)
          }
        }
        throw abortReason(signal)
      } finally {
        signal.removeEventListener('abort', onAbort)
        sub.close()
      }
    }
    await Promise.all([periodic(), follow()])
  }
}

/** The UTF-8 text of `bytes`, decoded in place (`Buffer.from(bytes)` would copy them first). */
function utf8(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('utf8')
}
