import { open, readFile, readdir, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RegistryLog } from '../src/log.js'
import { payloadB3 } from '../src/descriptors.js'
import { createMemoryStore, createSegmentStore, type LogStore } from '../src/store/index.js'
import { approve, genesisFor, payload, setOf, signers, tempDir } from './helpers.js'

const keys = signers(3)
const genesis = genesisFor(setOf(keys, 2))
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

async function fill(log: RegistryLog, n: number, at = 1000): Promise<void> {
  for (let i = 0; i < n; i++) {
    const h = log.head()
    const p = payload(h.version + 1)
    const e = await log.append(h, p, approve(keys.slice(0, 2), h.version, payloadB3(p)), at + h.version)
    if (e === undefined) throw new Error('append failed')
  }
}

async function segDir(segmentEntries = 4): Promise<{ dir: string; make(readOnly?: boolean): LogStore }> {
  const t = await tempDir()
  cleanups.push(t.cleanup)
  return { dir: t.dir, make: (readOnly = false): LogStore => createSegmentStore({ dir: t.dir, segmentEntries, readOnly }) }
}

describe.each([
  ['memory', () => Promise.resolve({ make: () => createMemoryStore({ segmentEntries: 4 }) })],
  ['segment', () => segDir()],
])('%s store', (_name, factory) => {
  it('appends by compare-and-set on HEAD, reads back, and refuses a stale HEAD', async () => {
    const f = await factory()
    const log = await RegistryLog.open(f.make(), genesis)
    expect(log.head()).toEqual({ version: 0, hash: log.genesisHash })
    await fill(log, 6)
    const stale = { version: 3, hash: log.head().hash }
    expect(await log.append(stale, payload(99), [], 1)).toBeUndefined()
    const r = await log.read(5)
    expect(r && 'entry' in r && r.entry.version).toBe(5)
    expect(await log.read(7)).toBeUndefined()
    expect(log.store.segments().map((s) => [s.first, s.last])).toEqual([[1, 4], [5, 6]])
    await log.store.close()
  })

  it('prunes whole segments, never the active one, and answers pruned for them', async () => {
    const f = await factory()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 10)
    const removed = await log.store.prune(100)
    expect(removed.map((s) => s.first)).toEqual([1, 5])
    expect(log.oldest()).toBe(9)
    expect(await log.read(3)).toMatchObject({ pruned: true })
    expect(await log.read(9)).toMatchObject({ entry: { version: 9 } })
    // Proofs survive pruning: every leaf hash is kept.
    expect(log.tree.size).toBe(10)
    await log.store.close()
  })
})

describe('segment store durability', () => {
  it('reopens with the same HEAD, tree and signer history', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 9)
    const head = log.head()
    const root = log.rootHex()
    await log.store.close()
    const again = await RegistryLog.open(f.make(), genesisFor(setOf(keys, 1)))
    expect(again.head()).toEqual(head)
    expect(again.rootHex()).toBe(root)
    expect(again.genesis).toEqual(genesis)
    expect(again.recoveries).toEqual({})
    await again.store.close()
  })

  it('truncates a torn last record and keeps every acknowledged commit', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 6)
    const acked = log.head()
    await log.store.close()
    // Crash mid-append of version 7: half a record at the end of the active segment.
    const seg = join(f.dir, (await readdir(f.dir)).filter((n) => n.startsWith('seg-')).sort().at(-1)!)
    const fh = await open(seg, 'a')
    await fh.write(Buffer.from([0, 0, 1, 0, 9, 9, 9, 9, 123, 34]))
    await fh.close()
    const before = (await stat(seg)).size
    const again = await RegistryLog.open(f.make(), genesis)
    expect(again.head()).toEqual(acked)
    expect(again.recoveries).toMatchObject({ torn_tail: 1 })
    expect((await stat(seg)).size).toBe(before - 10)
    await fill(again, 1)
    expect(again.head().version).toBe(7)
    await again.store.close()
  })

  it('writes leaf hashes a page at a time and all of them before a checkpoint; a crash loses none', async () => {
    const f = await segDir(1000)
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 130)
    const leaves = join(f.dir, 'leaves.bin')
    // 128 hashes (4 KiB) written at once; the last 2 wait for the next page or a sync.
    expect((await stat(leaves)).size).toBe(128 * 32)
    const root = log.rootHex()
    // A crash (no close): the 2 hashes never written are rebuilt from the segment.
    const again = await RegistryLog.open(f.make(), genesis)
    expect(again.rootHex()).toBe(root)
    expect(again.recoveries).toMatchObject({ leaves_rebuilt: 1 })
    await fill(again, 3)
    await again.store.appendCheckpoint({ treeSize: 133, root: again.rootHex(), note: 'n', createdAt: 1 })
    const file = await readFile(leaves)
    expect(file.length).toBe(133 * 32)
    for (let i = 0; i < 133; i++) expect(Buffer.compare(file.subarray(i * 32, (i + 1) * 32), again.tree.leafHash(i))).toBe(0)
    await again.store.close()
    await log.store.close()
  })

  it('reads a record just written at once through an open read handle, checksum checked', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 2)
    const store = log.store
    // No read handle on the segment yet: the caller reads through read(), which opens one.
    expect(store.readNow?.(2)).toBeUndefined()
    const same = (a: Uint8Array | undefined, version: number): boolean => a !== undefined && Buffer.compare(a, log.cached(version)!.bytes) === 0
    expect(same(await store.read(2), 2)).toBe(true)
    await fill(log, 1)
    expect(same(store.readNow?.(3), 3)).toBe(true)
    expect(store.readNow?.(4)).toBeUndefined()
    // A byte flipped on the medium fails the checksum, as read() does.
    const seg = join(f.dir, (await readdir(f.dir)).filter((n) => n.startsWith('seg-')).sort()[0]!)
    const buf = await readFile(seg)
    buf[buf.length - 5] = buf[buf.length - 5]! ^ 1
    await writeFile(seg, buf)
    expect(() => store.readNow?.(3)).toThrow(/checksum/)
    await store.close()
  })

  it('rebuilds leaf hashes that were not yet durable, and trims extra ones', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 6)
    const root = log.rootHex()
    await log.store.close()
    await truncate(join(f.dir, 'leaves.bin'), 32 * 3 + 5)
    const again = await RegistryLog.open(f.make(), genesis)
    expect(again.rootHex()).toBe(root)
    expect(again.recoveries).toMatchObject({ leaves_rebuilt: 1 })
    await again.store.close()
    await writeFile(join(f.dir, 'leaves.bin'), Buffer.concat([await readFile(join(f.dir, 'leaves.bin')), Buffer.alloc(64, 1)]))
    const third = await RegistryLog.open(f.make(), genesis)
    expect(third.rootHex()).toBe(root)
    expect(third.recoveries).toMatchObject({ leaves_truncated: 1 })
    await third.store.close()
  })

  it('refuses to open when a record before the tail is corrupt, and reports a flipped byte on read', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 6)
    await log.store.close()
    const first = join(f.dir, (await readdir(f.dir)).filter((n) => n.startsWith('seg-')).sort()[0]!)
    const buf = await readFile(first)
    buf[20]! ^= 0x01
    await writeFile(first, buf)
    await expect(RegistryLog.open(f.make(), genesis)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    // Offline: read-only open never repairs and never creates anything.
    const empty = await segDir()
    await expect(RegistryLog.open(empty.make(true), genesis)).rejects.toMatchObject({ code: 'Malformed' })
    expect(await readdir(empty.dir)).toEqual([])
  })

  it('drops a torn checkpoint line', async () => {
    const f = await segDir()
    const log = await RegistryLog.open(f.make(), genesis)
    await fill(log, 2)
    await log.store.appendCheckpoint({ treeSize: 2, root: log.rootHex(), note: 'n', createdAt: 1 })
    await log.store.close()
    await writeFile(join(f.dir, 'checkpoints.jsonl'), `${await readFile(join(f.dir, 'checkpoints.jsonl'), 'utf8')}{"treeSize":`)
    const again = await RegistryLog.open(f.make(), genesis)
    expect(again.store.checkpoints()).toHaveLength(1)
    expect(again.recoveries).toMatchObject({ torn_checkpoint: 1 })
    await again.store.close()
  })
})
