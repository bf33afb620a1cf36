/**
 * `verifyLog(dir)`: offline verification of a registry log directory (what `ron-node registry
 * fsck` runs). It opens the segment store read-only (nothing is repaired or created), reports what
 * the head record says was acknowledged and what is missing, and checks the whole chain, every
 * leaf hash and the tree, every approval against the signer set in force at its version (with the
 * TUF rule for signer-set changes), and every checkpoint's root and signature by the log key.
 *
 * `repairLog(dir)` (`fsck --repair`) makes the repairs a start would make — cutting a torn record
 * past the head record, which was never acknowledged — and refuses a damaged log without writing.
 *
 * @module
 */

import { readdir } from 'node:fs/promises'
import { MalformedError, canonicalJson, isRonError } from '@ron/core'
import { checkpointTreeHash, verifyCheckpoint } from './checkpoint.js'
import { descriptorSetSchema, payloadB3, signerSetOf, type SignerSet } from './descriptors.js'
import { entryHash, genesisHash, type LogEntry } from './entry.js'
import { leafBytes, leafFormatOf } from './leaf.js'
import { MerkleTree, treeHasher } from './merkle.js'
import { evaluateQuorum } from './signers.js'
import { readHeadFile, type HeadRecord } from './store/head-record.js'
import { GENESIS } from './store/segment-format.js'
import { createSegmentStore } from './store/segment.js'
import type { RecoveredLog } from './store/types.js'

export type { HeadRecord } from './store/head-record.js'

/** Options of {@link verifyLog} and {@link repairLog}. */
export interface LogCheckOptions {
  /**
   * Treat a missing or unreadable head record as something to rebuild from the log as it is
   * (`fsck --rebuild-head`), not as damage. Only for a log written before head records existed,
   * or whose head record alone was lost: it cannot tell whether acknowledged entries went with it.
   * @default false
   */
  rebuildHead?: boolean
}

/** The outcome of {@link verifyLog}. */
export interface VerifyLogReport {
  ok: boolean
  origin: string
  treeHash: string
  head: number
  /** Lowest version held (earlier ones were pruned under a checkpoint). */
  oldest: number
  entries: number
  checkpoints: number
  /** Root of the whole tree, hex. */
  root: string
  /** Everything wrong, one line each. */
  problems: string[]
  /** Recoverable conditions a normal start would repair (e.g. a torn tail). */
  warnings: string[]
  /** What the head record (`head.bin`) says was acknowledged; `undefined` when it is missing or unreadable. */
  headRecord: HeadRecord | undefined
}

/** The outcome of {@link repairLog}. */
export interface RepairLogReport {
  /** What was repaired, by kind (`torn_tail`, `torn_checkpoint`, `empty_segment`, `head_rebuilt`…). */
  repaired: Record<string, number>
  /** HEAD after the repair. */
  head: number
}

const WARNING_TEXT: Record<string, string> = {
  torn_tail: 'a torn record past the last acknowledged version (a crash mid-append; never acknowledged): start and --repair cut it',
  empty_segment: 'an empty last segment past the last acknowledged version: start and --repair remove it',
  torn_checkpoint: 'a torn checkpoint line past the recorded ones: start and --repair cut it',
  head_rolled_forward: 'whole entries past the head record (a crash between the two fsyncs of a commit; never acknowledged): start and --repair keep them and move the head record',
  head_rebuilt: 'no usable head record: --rebuild-head writes one for the log as it is',
  leaves_rebuilt: 'leaf hashes not yet durable in leaves.bin: start and --repair rebuild them from the segments',
  leaves_truncated: 'leaves.bin holds more leaf hashes than the log: start and --repair trim it',
}

/**
 * Verifies the log in `dir` without modifying it.
 * @returns a report; a segment that cannot be read beyond a torn tail is a problem in it
 * @throws {@link MalformedError} when `dir` holds no registry log
 * @example
 * ```ts
 * const report = await verifyLog('./data/registry')
 * if (!report.ok) console.error(report.problems.join('\n'))
 * ```
 */
export async function verifyLog(dir: string, options: LogCheckOptions = {}): Promise<VerifyLogReport> {
  const store = createSegmentStore({ dir, readOnly: true, rebuildHead: options.rebuildHead ?? false })
  const problems: string[] = []
  const warnings: string[] = []
  const headRecord = await readHeadFile(dir).then(
    (h) => h.record,
    () => undefined,
  )
  try {
    let r: RecoveredLog
    try {
      r = await store.open({ genesis: undefined, leafHash: (b, g) => treeHasher(g.treeHash).leaf(leafBytes(leafFormatOf(g), b)) })
    } catch (e) {
      if (!isRonError(e, 'IntegrityFailed')) throw e
      const listed = (e.details as { problems?: unknown } | undefined)?.problems
      return { ok: false, origin: '', treeHash: '', head: 0, oldest: 0, entries: 0, checkpoints: 0, root: '', problems: Array.isArray(listed) ? (listed as string[]) : [e.message], warnings, headRecord }
    }
    problems.push(...(r.problems ?? []))
    for (const [kind, n] of Object.entries(r.recoveries)) warnings.push(`${kind} × ${n}: ${WARNING_TEXT[kind] ?? 'a normal start repairs this'}`)
    const g = r.genesis
    const hasher = treeHasher(g.treeHash)
    const format = leafFormatOf(g)
    const tree = new MerkleTree(hasher)
    for (const h of r.leafHashes) tree.append(h)

    // Signer sets in force: genesis, what the last checkpoint remembers of the pruned part, then entries.
    const sets = new Map<number, SignerSet>([[0, g.signers]])
    for (const s of r.checkpoints.at(-1)?.signerSets ?? []) sets.set(s.version, { threshold: s.threshold, signers: s.signers })
    const setAt = (v: number): SignerSet => {
      let best = 0
      for (const k of sets.keys()) if (k <= v && k >= best) best = k
      return sets.get(best)!
    }

    let prev: string | undefined = r.oldest === 1 ? genesisHash(g) : undefined
    let entries = 0
    for (let v = r.oldest; v <= r.head.version; v++) {
      let bytes: Uint8Array | undefined
      try {
        bytes = await store.read(v)
      } catch (e) {
        problems.push(`version ${v}: ${e instanceof Error ? e.message : String(e)}`)
        prev = undefined
        continue
      }
      if (bytes === undefined) {
        problems.push(`version ${v}: missing`)
        prev = undefined
        continue
      }
      entries++
      if (Buffer.compare(hasher.leaf(leafBytes(format, bytes)), tree.leafHash(v - 1)) !== 0) problems.push(`version ${v}: leaf hash differs from leaves.bin`)
      let e: LogEntry
      try {
        e = JSON.parse(Buffer.from(bytes).toString('utf8')) as LogEntry
      } catch {
        problems.push(`version ${v}: not JSON`)
        prev = entryHash(bytes)
        continue
      }
      const problem = (msg: string): number => problems.push(`version ${v}: ${msg}`)
      if (e.version !== v) problem(`entry says version ${e.version}`)
      if (prev !== undefined && e.prev !== prev) problem('prev does not link the previous entry')
      const parsed = descriptorSetSchema.safeParse(e.payload)
      if (!parsed.success) problem(`payload is not a valid descriptor set (${parsed.error.issues[0]?.path.join('.') ?? ''})`)
      try {
        if (payloadB3(e.payload) !== e.payloadB3) problem('payloadB3 does not match the payload')
        if (canonicalJson(e) !== Buffer.from(bytes).toString('utf8')) problem('stored bytes are not the canonical JSON of the entry')
      } catch {
        problem('entry cannot be canonicalised')
      }
      const current = setAt(v - 1)
      const s = parsed.success ? signerSetOf(parsed.data) : undefined
      const next = s === undefined ? undefined : { threshold: s.threshold, signers: s.signers }
      const verdict = evaluateQuorum(current, next, e.approvals ?? [], { origin: g.origin, baseVersion: v - 1, payloadB3: e.payloadB3 })
      if (!verdict.ok) {
        problem(`approvals do not meet the signer set in force (${verdict.current.have}/${verdict.current.m}${verdict.next === undefined ? '' : `, new set ${verdict.next.have}/${verdict.next.m}`})`)
      }
      if (next !== undefined) sets.set(v, next)
      prev = entryHash(bytes)
    }
    if (prev !== undefined && r.head.version > 0 && prev !== r.head.hash) problems.push('HEAD hash does not match the last entry')

    for (const cp of r.checkpoints) {
      if (cp.treeSize > tree.size) {
        problems.push(`checkpoint ${cp.treeSize}: beyond the log (${tree.size})`)
        continue
      }
      if (Buffer.from(tree.root(cp.treeSize)).toString('hex') !== cp.root) problems.push(`checkpoint ${cp.treeSize}: root differs from the tree`)
      try {
        const body = verifyCheckpoint(cp.note, g.logKey)
        if (body.origin !== g.origin || body.treeSize !== cp.treeSize || Buffer.from(body.rootHash).toString('hex') !== cp.root) {
          problems.push(`checkpoint ${cp.treeSize}: signed note does not match its record`)
        }
        // Checkpoints signed before the hash was stated carry no line; one that states it must be right.
        if ((body.extensions ?? []).length > 0 && checkpointTreeHash(body) !== g.treeHash) {
          problems.push(`checkpoint ${cp.treeSize}: states tree hash ${checkpointTreeHash(body)}, the log uses ${g.treeHash}`)
        }
      } catch (err) {
        problems.push(`checkpoint ${cp.treeSize}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    if (r.oldest > 1) {
      const covering = r.checkpoints.find((c) => c.treeSize >= r.oldest - 1)
      if (covering === undefined) problems.push(`versions 1..${r.oldest - 1} were pruned without a covering checkpoint`)
    }
    return {
      ok: problems.length === 0,
      origin: g.origin,
      treeHash: g.treeHash,
      head: r.head.version,
      oldest: r.oldest,
      entries,
      checkpoints: r.checkpoints.length,
      root: Buffer.from(tree.root()).toString('hex'),
      problems,
      warnings,
      headRecord,
    }
  } finally {
    await store.close()
  }
}

/**
 * Repairs what a start would repair, and nothing else: a torn record past the head record (a
 * crash mid-append, never acknowledged), a torn checkpoint line past the recorded ones, leaf
 * hashes not yet durable; with `rebuildHead`, writes a head record for a log without a usable one.
 * A damaged log (acknowledged entries or checkpoints missing or rewritten) is refused unchanged.
 *
 * @throws {@link IntegrityFailedError} naming what is damaged (nothing is written)
 * @throws {@link MalformedError} when `dir` holds no registry log
 * @example
 * ```ts
 * const { repaired } = await repairLog('./data/registry') // e.g. { torn_tail: 1 }
 * ```
 */
export async function repairLog(dir: string, options: LogCheckOptions = {}): Promise<RepairLogReport> {
  const names = await readdir(dir).catch(() => [] as string[])
  if (!names.includes(GENESIS) && !names.some((n) => n.startsWith('seg-') || n === 'head.bin' || n === 'checkpoints.jsonl')) {
    throw new MalformedError(`${dir} holds no registry log (no ${GENESIS})`, { details: { field: 'dir' } })
  }
  const store = createSegmentStore({ dir, rebuildHead: options.rebuildHead ?? false })
  try {
    const r = await store.open({ genesis: undefined, leafHash: (b, g) => treeHasher(g.treeHash).leaf(leafBytes(leafFormatOf(g), b)) })
    return { repaired: { ...r.recoveries }, head: r.head.version }
  } finally {
    await store.close()
  }
}
