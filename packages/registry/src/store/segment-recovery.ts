/**
 * What opening a segment log finds, decided before anything is written: the held segments and
 * checkpoints, checked against the head record (`head.bin`), the problems that make the log
 * refuse to open, and the repairs a writable open may make.
 *
 * The rule: everything up to the head record was acknowledged, so the log must hold it —
 * a segment cut short, emptied, deleted or rewritten below it, or fewer checkpoints than it
 * records, is damage (a problem). What lies past it never was acknowledged: a torn record there
 * (a crash mid-append) is cut, whole records there (a crash between the segment's fsync and the
 * head record's) are kept and the head record moves to them.
 *
 * @module
 * @internal
 */

import { open, readFile, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { IntegrityFailedError } from '@ron/core'
import { entryHash, genesisHash, type Genesis, type Head, type LogEntry } from '../entry.js'
import { HEAD_FILE, readHeadFile, type HeadRecord } from './head-record.js'
import { isNotable } from './notable.js'
import { CHECKPOINTS, GENESIS, HEADER, SEGMENT_NAME, fsyncDir, scan, segFirst } from './segment-format.js'
import type { SegmentInfo, StoredCheckpoint } from './types.js'

/** A held segment file. */
export interface Segment {
  info: SegmentInfo
  path: string
  /** Byte offset of each record, by version − first. */
  offsets: number[]
  lengths: number[]
}

/** A repair a writable open makes (nothing is written before every check has passed). */
export interface Repair {
  kind: string
  run(): Promise<void>
}

/** The state of a log directory as found. */
export interface Found {
  genesis: Genesis
  segments: Segment[]
  /** The last whole record (after a torn tail is cut). */
  head: Head
  oldest: number
  /** Canonical bytes of recent entries (about two segments' worth), by version. */
  tail: Map<number, Uint8Array>
  notable: LogEntry[]
  checkpoints: StoredCheckpoint[]
  /** Bytes of `checkpoints.jsonl` the whole checkpoints occupy. */
  checkpointBytes: number
  /** The head record as read (`undefined`: missing or unreadable). */
  record: HeadRecord | undefined
  /** Everything that makes the log refuse to open, each naming its file. */
  problems: string[]
  repairs: Repair[]
  /** Counts by kind, for `registry_recoveries_total{kind}` (repairs included). */
  recoveries: Record<string, number>
}

/**
 * The error a damaged log refuses to open with: IntegrityFailed, naming the directory, every
 * problem (each names its file) and the fsck command.
 */
export function damagedLogError(dir: string, problems: string[]): IntegrityFailedError {
  return new IntegrityFailedError(
    `registry log ${dir} is damaged: ${problems.join('; ')}. It refuses to start rather than lose or fork acknowledged entries: run \`ron-node registry fsck --dir ${dir}\` for the details and what can be repaired`,
    { details: { dir, problems } },
  )
}

/** True when `dir` holds registry files but no genesis record (a log whose genesis was lost). */
export async function genesisLost(dir: string): Promise<boolean> {
  const names = await readdir(dir).catch(() => [] as string[])
  if (names.includes(GENESIS)) return false
  if (names.some((n) => SEGMENT_NAME.test(n)) || names.includes(CHECKPOINTS)) return true
  if (!names.includes(HEAD_FILE)) return false
  const h = await readHeadFile(dir)
  return h.record === undefined || h.record.version > 0
}

/** Reads the log in `dir` (whose `genesis.json` exists) without writing. */
export async function findLog(dir: string, o: { segmentEntries: number; rebuildHead: boolean }): Promise<Found> {
  const problems: string[] = []
  const repairs: Repair[] = []
  const recoveries: Record<string, number> = {}
  const bump = (kind: string, n = 1): void => {
    recoveries[kind] = (recoveries[kind] ?? 0) + n
  }
  const genesis = await loadGenesis(dir)
  const gHash = genesisHash(genesis)
  const headFile = await readHeadFile(dir)
  let rec = headFile.record
  if (headFile.missing) {
    if (o.rebuildHead) bump('head_rebuilt')
    else problems.push(`${HEAD_FILE} is missing: nothing proves which entries were acknowledged (restore it from a backup; a log written before head records existed needs \`fsck --rebuild-head\`)`)
  } else if (rec === undefined) {
    if (o.rebuildHead) bump('head_rebuilt')
    else problems.push(`${HEAD_FILE} holds no valid record (both slots fail their checksum)`)
  } else if (rec.version === 0 && rec.hash !== gHash) {
    problems.push(`${HEAD_FILE} belongs to another log (its version-0 hash is not this genesis's)`)
    rec = undefined
  }
  const acked = rec?.version ?? 0

  // Segments, oldest first: records up to the last whole one; the chain is checked in the last.
  const names = (await readdir(dir)).filter((n) => SEGMENT_NAME.test(n)).sort()
  const segments: Segment[] = []
  const tail = new Map<number, Uint8Array>()
  const notable: LogEntry[] = []
  let prevHash = gHash
  let prevVersion = 0
  let oldest = 0
  let lastName: string | undefined
  let shortReported = false
  /** The entry hash of the version the head record names, as held. */
  let ackedHash: string | undefined
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    const path = join(dir, name)
    const first = segFirst(name)
    const isLast = i === names.length - 1
    lastName = name
    const buf = await readFile(path)
    const { records, stop, reason } = scan(buf)
    const next = (records.at(-1)?.entry.version ?? first - 1) + 1
    if (reason === 'corrupt' || (reason === 'torn' && !isLast)) {
      problems.push(`${name}: the record of version ${next} at byte ${stop} fails its checksum or does not parse, and more follows it`)
      shortReported = true
      break
    }
    if (reason === 'torn') {
      if (rec !== undefined && next <= acked) {
        problems.push(`${name}: the record of version ${next} at byte ${stop} is cut or fails its checksum, but ${HEAD_FILE} records version ${acked} as acknowledged`)
        shortReported = true
      } else {
        bump('torn_tail')
        repairs.push({ kind: 'torn_tail', run: () => truncateFile(path, stop) })
      }
    }
    if (records.length === 0) {
      if (!isLast) {
        problems.push(`${name} is empty, but it must hold versions ${first}..${segFirst(names[i + 1]!) - 1}`)
        shortReported = true
      } else if (rec === undefined || first > acked) {
        // Created, then a crash before its first record: never held anything acknowledged.
        bump('empty_segment')
        repairs.push({ kind: 'empty_segment', run: () => rm(path, { force: true }).then(() => fsyncDir(dir)) })
      }
      continue
    }
    if (records[0]!.entry.version !== first) {
      problems.push(`${name}: starts at version ${records[0]!.entry.version}, not ${first}`)
      break
    }
    if (prevVersion !== 0 && first !== prevVersion + 1) {
      problems.push(`${name}: starts at version ${first}, but the segment before it ends at ${prevVersion} (versions ${prevVersion + 1}..${first - 1} are missing)`)
      shortReported = true
      break
    }
    if (oldest === 0) oldest = first
    const seg: Segment = {
      path,
      offsets: [],
      lengths: [],
      info: { first, last: first - 1, bytes: 0, firstCommittedAt: records[0]!.entry.committedAt, lastCommittedAt: 0 },
    }
    let broken = false
    for (const r of records) {
      const v = r.entry.version
      if (prevVersion !== 0 && v !== prevVersion + 1) {
        problems.push(`${name}: version ${v} follows version ${prevVersion}`)
        broken = true
        break
      }
      // (The first held entry of a pruned log has no predecessor here to link to.)
      if (isLast && (v === 1 || prevVersion > 0) && r.entry.prev !== prevHash) {
        problems.push(`${name}: the chain is broken at version ${v} (its prev is not the hash of version ${v - 1})`)
        broken = true
        break
      }
      prevHash = entryHash(r.bytes)
      prevVersion = v
      if (v === acked) ackedHash = prevHash
      seg.offsets.push(r.offset)
      seg.lengths.push(r.bytes.length)
      seg.info.last = v
      seg.info.lastCommittedAt = r.entry.committedAt
      seg.info.bytes = r.offset + HEADER + r.bytes.length
      if (isNotable(r.entry, r.bytes.length)) notable.push(r.entry)
      tail.set(v, r.bytes)
      if (tail.size > o.segmentEntries * 2) tail.delete(tail.keys().next().value!)
    }
    segments.push(seg)
    if (broken) break
  }
  const last = prevVersion
  const head: Head = last === 0 ? { version: 0, hash: gHash } : { version: last, hash: prevHash }
  if (oldest === 0) oldest = last + 1
  const where = lastName ?? 'no segment file'

  // Against the head record: everything up to it must be held, and be what it recorded.
  if (rec !== undefined) {
    if (last < acked) {
      if (!shortReported) {
        problems.push(`${where}: the log ends at version ${last}, but ${HEAD_FILE} records version ${acked} as acknowledged (versions ${last + 1}..${acked} are missing)`)
      }
    } else if (acked > 0) {
      const hash = ackedHash
      if (hash === undefined) {
        problems.push(`${HEAD_FILE} records version ${acked}, which the log no longer holds (pruned?) though it ends at ${last}`)
      } else if (hash !== rec.hash) {
        const seg = segments.find((s) => s.info.first <= acked && acked <= s.info.last)
        const file = seg === undefined ? where : seg.path.slice(dir.length + 1)
        problems.push(`${file}: version ${acked} does not match ${HEAD_FILE} (its entry hash is ${hash}, the head record says ${rec.hash}): the record was rewritten`)
      }
    }
    if (last > acked && problems.length === 0) bump('head_rolled_forward')
    if (acked >= rec.oldest && oldest > rec.oldest && last >= acked) {
      const held = segments[0] === undefined ? 'no segment file' : segments[0].path.slice(dir.length + 1)
      problems.push(`${held}: the oldest version held is ${oldest}, but ${HEAD_FILE} records versions from ${rec.oldest} as held (segment files deleted or emptied?)`)
    }
  }

  const cps = await loadCheckpoints(dir, rec, problems, repairs, bump)
  const newest = cps.list.at(-1)
  if (newest !== undefined && newest.treeSize > last) {
    problems.push(`${CHECKPOINTS}: the newest signed checkpoint covers ${newest.treeSize} entries, but the log ends at version ${last} (${where}): acknowledged entries are missing`)
  }
  return { genesis, segments, head, oldest, tail, notable, checkpoints: cps.list, checkpointBytes: cps.bytes, record: rec, problems, repairs, recoveries }
}

async function loadGenesis(dir: string): Promise<Genesis> {
  const path = join(dir, GENESIS)
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Genesis
  } catch (e) {
    throw new IntegrityFailedError(`cannot read ${path}`, { cause: e })
  }
}

async function truncateFile(path: string, size: number): Promise<void> {
  const fh = await open(path, 'r+')
  try {
    await fh.truncate(size)
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * Reads `checkpoints.jsonl`: the lines up to the bytes the head record records must all be there
 * and parse; past them, a torn last line (a crash mid-write) is cut and whole lines are kept.
 */
async function loadCheckpoints(
  dir: string,
  rec: HeadRecord | undefined,
  problems: string[],
  repairs: Repair[],
  bump: (kind: string) => void,
): Promise<{ list: StoredCheckpoint[]; bytes: number }> {
  const path = join(dir, CHECKPOINTS)
  const recorded = rec?.checkpointBytes ?? 0
  const count = rec?.checkpoints ?? 0
  let buf: Buffer
  try {
    buf = await readFile(path)
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ENOENT') throw e
    if (count > 0) problems.push(`${CHECKPOINTS} is missing, but ${HEAD_FILE} records ${count} signed checkpoint(s) in it`)
    return { list: [], bytes: 0 }
  }
  const list: StoredCheckpoint[] = []
  let good = 0
  let within = 0
  while (good < buf.length) {
    const nl = buf.indexOf(0x0a, good)
    const end = nl === -1 ? buf.length : nl
    let cp: StoredCheckpoint | undefined
    if (nl !== -1) {
      try {
        cp = JSON.parse(buf.subarray(good, end).toString('utf8')) as StoredCheckpoint
      } catch {
        cp = undefined
      }
    }
    if (cp === undefined) {
      const rest = buf.subarray(nl === -1 ? buf.length : nl + 1)
      if (good < recorded || rest.some((b) => b !== 0x0a)) {
        problems.push(`${CHECKPOINTS} is corrupt at byte ${good} (line ${list.length + 1})`)
      } else {
        bump('torn_checkpoint')
        const at = good
        repairs.push({ kind: 'torn_checkpoint', run: () => truncateFile(path, at) })
      }
      break
    }
    list.push(cp)
    good = end + 1
    if (good <= recorded) within++
  }
  if (within < count || Math.min(good, buf.length) < recorded) {
    problems.push(`${CHECKPOINTS} holds ${within} of the ${count} signed checkpoint(s) ${HEAD_FILE} records (${Math.min(good, buf.length)} of ${recorded} bytes): checkpoints are missing`)
  }
  return { list, bytes: good }
}
