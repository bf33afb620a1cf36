/**
 * Injected disk faults (issue 20 item 3): a failed write of the log is never acknowledged, leaves
 * nothing a later start would misread, turns writes unready with SPEC's reason and recovers when
 * the fault clears. The faults are injected at the one boundary we do not own — `node:fs` — per
 * file and per call (`fdatasync`, `ftruncate`, `write`), so the store's own undo paths run.
 */
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { payloadB3 } from '../src/descriptors.js'
import { RegistryLog } from '../src/log.js'
import { createSegmentStore } from '../src/store/index.js'
import { readHeadFile } from '../src/store/head-record.js'
import { verifyLog } from '../src/verify-log.js'
import { approve, genesisFor, harness, payload, setOf, signers, tempDir, type Harness } from './helpers.js'

type Op = 'datasync' | 'sync' | 'truncate' | 'write'
interface Fault {
  code: string
  /** How many more calls fail (Infinity: until cleared). */
  times: number
  /** `write` only: the first failing call writes half its bytes before the next one fails. */
  partial?: boolean
  /** Calls failed so far. */
  hits: number
}

const fault = vi.hoisted(() => {
  const faults = new Map<string, Fault>()
  const fds = new Map<number, string>()
  const hit = (file: string | undefined, op: string): Error | undefined => {
    if (file === undefined) return undefined
    for (const [key, f] of faults) {
      const [prefix, fop] = key.split('|') as [string, string]
      if (fop !== op || !file.startsWith(prefix) || f.times <= 0) continue
      f.times--
      f.hits++
      return Object.assign(new Error(`${f.code}: injected ${op} fault on ${file}`), { code: f.code, syscall: op, errno: -5 })
    }
    return undefined
  }
  return { faults, fds, hit }
})

/** Fails `op` on files whose name starts with `prefix`. */
function inject(prefix: string, op: Op, code: string, times = 1, partial = false): void {
  fault.faults.set(`${prefix}|${op}`, { code, times, partial, hits: 0 })
}

/** Calls of `op` on `prefix` failed so far. */
function hits(prefix: string, op: Op): number {
  return fault.faults.get(`${prefix}|${op}`)?.hits ?? 0
}

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const path = await import('node:path')
  const open = async (...args: Parameters<typeof real.open>) => {
    const fh = await real.open(...args)
    const file = path.basename(String(args[0]))
    fault.fds.set(fh.fd, file)
    return new Proxy(fh, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown
        if (typeof v !== 'function') return v
        if (prop === 'datasync' || prop === 'sync' || prop === 'truncate') {
          return async (...a: unknown[]) => {
            const e = fault.hit(file, prop)
            if (e !== undefined) throw e
            return (v as (...x: unknown[]) => unknown).apply(target, a)
          }
        }
        return (v as (...x: unknown[]) => unknown).bind(target)
      },
    })
  }
  return { ...real, open, default: { ...real, open } }
})

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  const writeSync = (fd: number, buf: Uint8Array, off: number, len: number, pos: number | null): number => {
    const file = fault.fds.get(fd)
    const key = [...fault.faults.keys()].find((k) => k.endsWith('|write') && file !== undefined && file.startsWith(k.split('|')[0]!))
    const f = key === undefined ? undefined : fault.faults.get(key)
    if (f !== undefined && f.times > 0 && f.partial === true && len > 1) {
      f.partial = false
      return real.writeSync(fd, buf, off, Math.floor(len / 2), pos === null ? null : pos)
    }
    const e = fault.hit(file, 'write')
    if (e !== undefined) throw e
    return real.writeSync(fd, buf, off, len, pos)
  }
  return { ...real, writeSync, default: { ...real, writeSync } }
})

const keys = signers(3)
const genesis = genesisFor(setOf(keys, 2))
const cleanups: Array<() => Promise<void>> = []
let h: Harness | undefined
afterEach(async () => {
  fault.faults.clear()
  await h?.close()
  h = undefined
  for (const c of cleanups.splice(0)) await c()
})

async function append(log: RegistryLog): Promise<number> {
  const head = log.head()
  const p = payload(head.version + 1)
  const e = await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), 1000 + head.version)
  if (e === undefined) throw new Error('HEAD moved')
  return e.entry.version
}

async function logIn(n: number): Promise<{ dir: string; log: RegistryLog; reopen(): Promise<RegistryLog>; segSize(): Promise<number> }> {
  const t = await tempDir()
  cleanups.push(t.cleanup)
  const make = () => RegistryLog.open(createSegmentStore({ dir: t.dir, segmentEntries: 100 }), genesis)
  const log = await make()
  for (let i = 0; i < n; i++) await append(log)
  return {
    dir: t.dir,
    log,
    reopen: make,
    segSize: async () => (await stat(join(t.dir, (await readdir(t.dir)).filter((f) => f.startsWith('seg-')).sort().at(-1)!))).size,
  }
}

describe('a failed write of the log (injected)', () => {
  it('a failed segment fsync is not acknowledged and leaves nothing behind', async () => {
    const l = await logIn(2)
    const size = await l.segSize()
    inject('seg-', 'datasync', 'EIO')
    await expect(append(l.log)).rejects.toMatchObject({ code: 'EIO' })
    expect(l.log.head().version).toBe(2)
    expect(await l.segSize()).toBe(size)
    // The head record is written only after the segment's fsync succeeded.
    expect((await readHeadFile(l.dir)).record).toMatchObject({ version: 2 })
    expect(await append(l.log)).toBe(3)
    await l.log.store.close()
    const again = await l.reopen()
    expect(again.head().version).toBe(3)
    expect(again.recoveries).toEqual({})
    await again.store.close()
  })

  it('ENOSPC half-way through a record: the partial record is cut, the next append is clean', async () => {
    const l = await logIn(2)
    const size = await l.segSize()
    inject('seg-', 'write', 'ENOSPC', 1, true)
    await expect(append(l.log)).rejects.toMatchObject({ code: 'ENOSPC' })
    expect(await l.segSize()).toBe(size)
    expect(await append(l.log)).toBe(3)
    await l.log.store.close()
    expect(await verifyLog(l.dir)).toMatchObject({ ok: true, head: 3, warnings: [] })
  })

  it('a failed head-record write: the head record is rewritten for the old HEAD, then the record is cut', async () => {
    const l = await logIn(2)
    const size = await l.segSize()
    inject('head.bin', 'datasync', 'EIO')
    await expect(append(l.log)).rejects.toMatchObject({ code: 'EIO' })
    expect(l.log.head().version).toBe(2)
    expect(await l.segSize()).toBe(size)
    expect((await readHeadFile(l.dir)).record).toMatchObject({ version: 2, hash: l.log.head().hash })
    expect(await append(l.log)).toBe(3)
    await l.log.store.close()
    const again = await l.reopen()
    expect(again.head().version).toBe(3)
    expect(again.recoveries).toEqual({})
    await again.store.close()
  })

  it('while the disk keeps failing, writes answer NotReady until probe() undoes the failed write', async () => {
    const l = await logIn(2)
    inject('head.bin', 'datasync', 'EIO', Infinity)
    inject('seg-', 'truncate', 'EIO', Infinity)
    await expect(append(l.log)).rejects.toMatchObject({ code: 'EIO' })
    await expect(append(l.log)).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'io_error' } })
    await expect(l.log.store.probe()).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'io_error' } })
    expect(l.log.head().version).toBe(2)
    fault.faults.clear()
    await l.log.store.probe()
    expect(await append(l.log)).toBe(3)
    await l.log.store.close()
    expect(await verifyLog(l.dir)).toMatchObject({ ok: true, head: 3, warnings: [] })
  })

  it('a restart while a failed write is not undone opens cleanly (never refused, nothing misread)', async () => {
    const l = await logIn(2)
    const acked = l.log.head()
    inject('head.bin', 'datasync', 'EIO', Infinity)
    inject('seg-', 'truncate', 'EIO', Infinity)
    await expect(append(l.log)).rejects.toMatchObject({ code: 'EIO' })
    await l.log.store.close()
    fault.faults.clear()
    // The segment holds version 3 whole; head.bin holds 2 or 3, as the disk kept it: either way
    // the log opens, with every acknowledged version.
    const again = await l.reopen()
    expect(again.head().version).toBeGreaterThanOrEqual(acked.version)
    expect((await again.read(2)) as { hash: string }).toMatchObject({ hash: acked.hash })
    await again.store.close()
    expect(await verifyLog(l.dir)).toMatchObject({ ok: true })
  })

  it('a failed checkpoint write is not stored; the retry is, and the log reopens with it', async () => {
    const l = await logIn(3)
    const cp = { treeSize: 3, root: l.log.rootHex(), note: 'n', createdAt: 1 }
    inject('checkpoints.jsonl', 'sync', 'EIO')
    await expect(l.log.store.appendCheckpoint(cp)).rejects.toMatchObject({ code: 'EIO' })
    expect(l.log.store.checkpoints()).toHaveLength(0)
    inject('head.bin', 'datasync', 'EIO')
    await expect(l.log.store.appendCheckpoint(cp)).rejects.toMatchObject({ code: 'EIO' })
    expect(l.log.store.checkpoints()).toHaveLength(0)
    await l.log.store.appendCheckpoint(cp)
    expect(l.log.store.checkpoints()).toHaveLength(1)
    await l.log.store.close()
    const again = await l.reopen()
    expect(again.store.checkpoints()).toHaveLength(1)
    expect((await readHeadFile(l.dir)).record).toMatchObject({ checkpoints: 1 })
    await again.store.close()
  })

  it('a failed prune keeps every segment and the log reopens', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const log = await RegistryLog.open(createSegmentStore({ dir: t.dir, segmentEntries: 2 }), genesis)
    for (let i = 0; i < 5; i++) await append(log)
    await log.store.appendCheckpoint({ treeSize: 5, root: log.rootHex(), note: 'n', createdAt: 1 })
    inject('head.bin', 'datasync', 'EIO')
    await expect(log.store.prune(4)).rejects.toMatchObject({ code: 'EIO' })
    expect(log.oldest()).toBe(1)
    expect((await readdir(t.dir)).filter((f) => f.startsWith('seg-'))).toHaveLength(3)
    expect((await log.store.prune(4)).length).toBe(2)
    expect(log.oldest()).toBe(5)
    await log.store.close()
  })
})

describe('the service on an injected disk fault', () => {
  async function commit(x: Harness, i: number): Promise<number> {
    const p = await x.client.propose(payload(i))
    return (await x.client.commit(p.proposalId, { approvals: approve(x.keys.slice(0, 2), p.baseVersion, p.payloadB3) })).version
  }

  it('a read-only disk: commit and checkpoint answer 503 read_only, reads stay up, writes come back when it clears', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    h = await harness({ dataDir: t.dir, checkpointIntervalMs: 1000, writeReadiness: { slowCommitMs: 60_000, probeIntervalMs: 1000 } })
    expect(await commit(h, 1)).toBe(1)
    inject('seg-', 'write', 'EROFS', Infinity)
    inject('checkpoints.jsonl', 'write', 'EROFS', Infinity)
    inject('.probe', 'sync', 'EROFS', Infinity)
    const p = await h.client.propose(payload(2))
    await expect(h.client.commit(p.proposalId, { approvals: approve(h.keys.slice(0, 2), p.baseVersion, p.payloadB3) })).rejects.toMatchObject({
      status: 503,
      code: 'NotReady',
      details: { reason: 'read_only' },
    })
    expect(h.svc.health()).toMatchObject({ live: true, ready: true, writeReady: false, paths: { write: false, read: true } })
    expect(h.svc.health().missing).toContain('disk')
    expect(h.svc.health().reason).toContain('disk: read_only')
    await expect(h.client.propose(payload(3))).rejects.toMatchObject({ status: 503, details: { reason: 'read_only' } })
    await expect(h.svc.checkpoint()).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'read_only' } })
    expect((await h.client.head()).version).toBe(1)
    expect(await h.client.get(1)).toMatchObject({ version: 1 })
    // The probe keeps failing while the disk does, and so does every interval's checkpoint: the
    // checkpointor carries on (a crash loop would escalate to not-live), writes stay unready.
    const x = h
    for (let i = 1; i <= 7; i++) {
      await vi.waitFor(async () => {
        await x.clock.advance(1000)
        expect(hits('checkpoints.jsonl', 'write')).toBeGreaterThan(i)
      })
    }
    await vi.waitFor(() => expect(hits('.probe', 'sync')).toBeGreaterThan(0))
    expect(h.svc.health()).toMatchObject({ live: true, writeReady: false })
    expect(h.svc.health().missing).toContain('disk')
    expect(h.svc.health().reason).toContain('disk: read_only')
    expect(await h.svc.metricsText()).not.toMatch(/tasks_panicked_total\{kind="checkpointor"[^}]*\} [1-9]/)
    fault.faults.clear()
    await vi.waitFor(async () => {
      await x.clock.advance(1000)
      expect(x.svc.health().writeReady).toBe(true)
    })
    expect(await commit(h, 2)).toBe(2)
    await h.svc.checkpoint()
    expect(await h.svc.metricsText()).not.toMatch(/status="500"/)
    await h.close()
    h = undefined
    const report = await verifyLog(t.dir)
    expect(report).toMatchObject({ ok: true, head: 2, warnings: [] })
    expect(report.checkpoints).toBeGreaterThanOrEqual(1)
  })
})

