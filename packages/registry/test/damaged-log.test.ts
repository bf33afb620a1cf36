/**
 * The registry refuses a damaged log (issue 20 item 4): the head record (`head.bin`) is durable
 * evidence of every acknowledged commit, so a log cut short, a rewritten last record, a deleted
 * checkpoint file or a deleted head record refuses to open — naming the file and
 * `ron-node registry fsck` — instead of coming up on less than it acknowledged. A torn tail past
 * the head record (a crash mid-append: never acknowledged) is still repaired.
 */
import { open, readFile, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { payloadB3 } from '../src/descriptors.js'
import { RegistryLog } from '../src/log.js'
import { createSegmentStore } from '../src/store/index.js'
import { HEAD_FILE, readHeadFile } from '../src/store/head-record.js'
import { repairLog, verifyLog } from '../src/verify-log.js'
import { createRegistryService } from '../src/service.js'
import { ORIGIN, approve, genesisFor, payload, setOf, signers, tempDir } from './helpers.js'

const keys = signers(3)
const genesis = genesisFor(setOf(keys, 2))
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

async function fill(log: RegistryLog, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const h = log.head()
    const p = payload(h.version + 1)
    const e = await log.append(h, p, approve(keys.slice(0, 2), h.version, payloadB3(p)), 1000 + h.version)
    if (e === undefined) throw new Error('append failed')
  }
}

/** A log of `n` entries in segments of `segmentEntries`, closed; optionally with a checkpoint of its whole tree. */
async function logOf(n: number, o: { segmentEntries?: number; checkpoint?: boolean } = {}): Promise<{ dir: string; open(): Promise<RegistryLog>; segs(): Promise<string[]> }> {
  const t = await tempDir()
  cleanups.push(t.cleanup)
  const make = () => createSegmentStore({ dir: t.dir, segmentEntries: o.segmentEntries ?? 4 })
  const log = await RegistryLog.open(make(), genesis)
  await fill(log, n)
  if (o.checkpoint === true) await log.store.appendCheckpoint({ treeSize: log.tree.size, root: log.rootHex(), note: 'n', createdAt: 1 })
  await log.store.close()
  return {
    dir: t.dir,
    open: () => RegistryLog.open(make(), genesis),
    segs: async () => (await readdir(t.dir)).filter((f) => f.startsWith('seg-')).sort(),
  }
}

/** Byte offsets and lengths of the records of a segment file. */
async function records(path: string): Promise<Array<{ off: number; len: number }>> {
  const buf = await readFile(path)
  const out: Array<{ off: number; len: number }> = []
  for (let off = 0; off + 8 <= buf.length; ) {
    const len = buf.readUInt32BE(off)
    out.push({ off, len })
    off += 8 + len
  }
  return out
}

/** Expects opening to refuse with IntegrityFailed naming `file` and the fsck command, and leaves the files untouched. */
async function expectRefused(l: { dir: string; open(): Promise<RegistryLog> }, file: RegExp): Promise<string> {
  const before = await snapshot(l.dir)
  const err = await l.open().then(
    (log) => {
      void log.store.close()
      return undefined
    },
    (e: unknown) => e as Error & { code?: string },
  )
  expect(err, 'the log must refuse to open').toBeDefined()
  expect(err).toMatchObject({ code: 'IntegrityFailed' })
  expect(err!.message).toMatch(file)
  expect(err!.message).toMatch(/ron-node registry fsck/)
  expect(await snapshot(l.dir), 'a refused start writes nothing').toEqual(before)
  return err!.message
}

async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const f of (await readdir(dir)).sort()) out[f] = (await readFile(join(dir, f))).toString('base64')
  return out
}

describe('a damaged log refuses to open', () => {
  it('truncate -s 0 of the only segment (was: start at v0 and accept a fork)', async () => {
    const l = await logOf(3)
    const [seg] = await l.segs()
    await truncate(join(l.dir, seg!), 0)
    const msg = await expectRefused(l, new RegExp(`${seg}.*${HEAD_FILE}|${HEAD_FILE}.*${seg}`))
    expect(msg).toMatch(/version 3/)
  })

  it('truncate -s 0 of an older segment (was: read as pruned)', async () => {
    const l = await logOf(6)
    const [first] = await l.segs()
    await truncate(join(l.dir, first!), 0)
    await expectRefused(l, new RegExp(first!))
  })

  it('a deleted last segment', async () => {
    const l = await logOf(6)
    const last = (await l.segs()).at(-1)!
    await rm(join(l.dir, last))
    await expectRefused(l, new RegExp(HEAD_FILE))
  })

  it('a cut last record (was: dropped as a torn tail)', async () => {
    const l = await logOf(3)
    const seg = join(l.dir, (await l.segs())[0]!)
    const last = (await records(seg)).at(-1)!
    await truncate(seg, last.off + 8 + Math.floor(last.len / 2))
    const msg = await expectRefused(l, new RegExp(`seg-0+1\\.log`))
    expect(msg).toMatch(/version 3/)
  })

  it('a bit flip in the last record (was: dropped as a torn tail)', async () => {
    const l = await logOf(3)
    const seg = join(l.dir, (await l.segs())[0]!)
    const buf = await readFile(seg)
    buf[buf.length - 5]! ^= 0x10
    await writeFile(seg, buf)
    await expectRefused(l, /seg-0+1\.log/)
  })

  it('a rewritten last record with a recomputed CRC is caught by the hash chain against the head record', async () => {
    const l = await logOf(3)
    const seg = join(l.dir, (await l.segs())[0]!)
    const buf = await readFile(seg)
    const last = (await records(seg)).at(-1)!
    const text = buf.subarray(last.off + 8, last.off + 8 + last.len).toString('utf8')
    const forged = Buffer.from(text.replace('"committedAt":1002', '"committedAt":1009'))
    expect(forged.length).toBe(last.len)
    expect(forged.equals(buf.subarray(last.off + 8, last.off + 8 + last.len))).toBe(false)
    forged.copy(buf, last.off + 8)
    buf.writeUInt32BE(crc32(forged), last.off + 4)
    await writeFile(seg, buf)
    const msg = await expectRefused(l, new RegExp(`seg-0+1\\.log.*${HEAD_FILE}`))
    expect(msg).toMatch(/version 3/)
  })

  it('a deleted checkpoint file', async () => {
    const l = await logOf(3, { checkpoint: true })
    await rm(join(l.dir, 'checkpoints.jsonl'))
    await expectRefused(l, /checkpoints\.jsonl/)
  })

  it('a checkpoint file cut short', async () => {
    const l = await logOf(3, { checkpoint: true })
    const log = await l.open()
    await log.store.appendCheckpoint({ treeSize: 3, root: log.rootHex(), note: 'again', createdAt: 2 })
    await log.store.close()
    const text = await readFile(join(l.dir, 'checkpoints.jsonl'), 'utf8')
    await writeFile(join(l.dir, 'checkpoints.jsonl'), text.slice(0, text.indexOf('\n') + 1))
    await expectRefused(l, /checkpoints\.jsonl/)
  })

  it('a deleted head record', async () => {
    const l = await logOf(3)
    await rm(join(l.dir, HEAD_FILE))
    await expectRefused(l, new RegExp(HEAD_FILE))
  })

  it('a log shorter than its newest signed checkpoint, even without a head record', async () => {
    const l = await logOf(3, { checkpoint: true })
    await rm(join(l.dir, HEAD_FILE))
    const [seg] = await l.segs()
    await truncate(join(l.dir, seg!), 0)
    const msg = await expectRefused(l, /checkpoints\.jsonl/)
    expect(msg).toMatch(/checkpoint/)
  })

  it('a deleted genesis record under an existing log (was: a new genesis over old segments)', async () => {
    const l = await logOf(2)
    await rm(join(l.dir, 'genesis.json'))
    await expectRefused(l, /genesis\.json/)
  })
})

describe('what is still repaired on open', () => {
  it('a torn tail past the head record (a crash mid-append, never acknowledged) is truncated', async () => {
    const l = await logOf(3)
    const seg = join(l.dir, (await l.segs())[0]!)
    const size = (await stat(seg)).size
    const fh = await open(seg, 'a')
    await fh.write(Buffer.from([0, 0, 1, 0, 9, 9, 9, 9, 123, 34]))
    await fh.close()
    const log = await l.open()
    expect(log.head().version).toBe(3)
    expect(log.recoveries).toMatchObject({ torn_tail: 1 })
    expect((await stat(seg)).size).toBe(size)
    await fill(log, 1)
    expect(log.head().version).toBe(4)
    await log.store.close()
  })

  it('a whole record past the head record (crash after its fsync, before the head record) is kept and the head record moves to it', async () => {
    const l = await logOf(3)
    const before = await readHeadFile(l.dir)
    const log = await l.open()
    await fill(log, 1)
    await log.store.close()
    // Put back the head record of version 3: as if the crash came between the two fsyncs.
    await writeFile(join(l.dir, HEAD_FILE), before.bytes)
    const again = await l.open()
    expect(again.head().version).toBe(4)
    expect(again.recoveries).toMatchObject({ head_rolled_forward: 1 })
    await again.store.close()
    expect((await readHeadFile(l.dir)).record).toMatchObject({ version: 4 })
  })
})

describe('the service on a log with a whole record past its head record', () => {
  it('starts, keeps it, and counts registry_recoveries_total{kind="head_rolled_forward"}', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const svc = await createRegistryService({ dataDir: t.dir, origin: ORIGIN, signers: setOf(keys, 2) })
    expect(await svc.metricsText()).toMatch(/registry_recoveries_total\{kind="head_rolled_forward",service="registry"\} 0/)
    await svc.close()
    const before = await readHeadFile(t.dir)
    const log = await RegistryLog.open(createSegmentStore({ dir: t.dir }), undefined)
    await fill(log, 1)
    await log.store.close()
    await writeFile(join(t.dir, HEAD_FILE), before.bytes)
    const again = await createRegistryService({ dataDir: t.dir, origin: ORIGIN, signers: setOf(keys, 2) })
    try {
      expect(again.head().version).toBe(1)
      expect(await again.metricsText()).toMatch(/registry_recoveries_total\{kind="head_rolled_forward",service="registry"\} 1/)
    } finally {
      await again.close()
    }
  })
})

describe('fsck and --repair', () => {
  it('fsck names what is missing; repair refuses to touch a damaged log', async () => {
    const l = await logOf(3, { checkpoint: true })
    const [seg] = await l.segs()
    await truncate(join(l.dir, seg!), 0)
    const report = await verifyLog(l.dir)
    expect(report.ok).toBe(false)
    const text = report.problems.join('\n')
    expect(text).toMatch(new RegExp(HEAD_FILE))
    expect(text).toMatch(/checkpoints\.jsonl/)
    expect(report.headRecord).toMatchObject({ version: 3, checkpoints: 1 })
    const before = await snapshot(l.dir)
    await expect(repairLog(l.dir)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    expect(await snapshot(l.dir)).toEqual(before)
  })

  it('repair truncates a torn tail past the head record, and only that', async () => {
    const l = await logOf(3)
    const seg = join(l.dir, (await l.segs())[0]!)
    const size = (await stat(seg)).size
    await writeFile(seg, Buffer.concat([await readFile(seg), Buffer.from([0, 0, 0, 90, 1, 2, 3])]))
    const report = await verifyLog(l.dir)
    expect(report.ok).toBe(true)
    expect(report.warnings.join('\n')).toMatch(/torn_tail/)
    const repaired = await repairLog(l.dir)
    expect(repaired.repaired).toMatchObject({ torn_tail: 1 })
    expect((await stat(seg)).size).toBe(size)
    const after = await verifyLog(l.dir)
    expect(after).toMatchObject({ ok: true, warnings: [], head: 3 })
  })

  it('--rebuild-head writes a head record for a log without one, only when the rest verifies', async () => {
    const l = await logOf(3, { checkpoint: true })
    await rm(join(l.dir, HEAD_FILE))
    await expect(repairLog(l.dir)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    const r = await repairLog(l.dir, { rebuildHead: true })
    expect(r.repaired).toMatchObject({ head_rebuilt: 1 })
    expect((await readHeadFile(l.dir)).record).toMatchObject({ version: 3, checkpoints: 1 })
    const log = await l.open()
    expect(log.head().version).toBe(3)
    await log.store.close()
    // Not when the log is shorter than its newest checkpoint.
    await rm(join(l.dir, HEAD_FILE))
    await truncate(join(l.dir, (await l.segs())[0]!), 0)
    await expect(repairLog(l.dir, { rebuildHead: true })).rejects.toMatchObject({ code: 'IntegrityFailed' })
  })
})
