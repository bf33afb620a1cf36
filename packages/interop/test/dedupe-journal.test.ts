/**
 * Webhook dedupe that survives a restart (issue 20 item 8): the dedupe window kept in
 * `dataDir/dedupe.jsonl`, fsynced before a delivery is acknowledged, bounded by the replay window;
 * and a full or read-only disk under it answered 503 `NotReady` with core's reasons, the webhook
 * path unready until the disk takes writes again (a real tmpfs where the test may mount one).
 */
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, type TransportResponse } from '@ron/core'
import { VirtualClock, mountTmpfs, seededRandom, type Tmpfs } from '@ron/core/testing'
import { DedupeStore, createInteropService, signWebhook, toServiceTokens, type InteropService } from '../src/index.js'
import { DEDUPE_FILE, DedupeJournal } from '../src/dedupe-journal.js'
import { SECRETS, closeOnVirtualTime, readJson, system, type System } from './helpers.js'

let sys: System | undefined
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
  await sys?.close()
  sys = undefined
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ron-interop-dedupe-'))
  cleanups.push(() => rm(dir, { recursive: true, force: true }))
  return dir
}

function deliver(s: System, target: string, id: string, body = `{"id":"${id}"}`): Promise<TransportResponse> {
  const w = signWebhook({ provider: 'github', secret: SECRETS.github, body, nowMs: s.clock.now(), deliveryId: id })
  return s.transport.request(target, { method: w.method, path: w.path, headers: w.headers, body: w.body })
}

/** A second interop on the same transport, clock and data directory: a restarted process. */
async function restarted(s: System, dataDir: string, name: string): Promise<InteropService> {
  const tokens = s.issuer.mint({ sub: 'node:test', scope: ['storage:write', 'passport:issue'], aud: ['storage', 'passport'], ttlSec: 86_400 })
  const next = await createInteropService({ dataDir, webhooks: { providers: { github: { secrets: [SECRETS.github] } } } }, s.transport, { clock: s.clock, random: seededRandom(9), tokens: toServiceTokens(tokens) })
  s.transport.mount(name, next)
  cleanups.push(() => closeOnVirtualTime(s.clock, next.close()))
  return next
}

describe('durable webhook dedupe', () => {
  it('regression: a delivery acknowledged before a restart is still a duplicate after it (same receipt, stored once)', async () => {
    const dataDir = await tempDir()
    sys = await system({ dataDir })
    const first = await deliver(sys, 'interop', 'd-1')
    expect(first.status).toBe(202)
    const { receipt } = await readJson<{ receipt: string }>(first)
    // The record is on disk before the answer (GitHub's delivery id is not signed: the key is the body's address).
    expect(await readFile(join(dataDir, DEDUPE_FILE), 'utf8')).toContain(`"r":"${receipt}"`)
    await closeOnVirtualTime(sys.clock, sys.interop.close())

    await restarted(sys, dataDir, 'interop-2')
    const again = await deliver(sys, 'interop-2', 'd-1')
    expect(again.status).toBe(200)
    expect(await readJson(again)).toEqual({ accepted: true, receipt, duplicate: true })
    // A delivery the first process never saw is new to the second.
    expect((await deliver(sys, 'interop-2', 'd-2')).status).toBe(202)
  })

  it('remembers no longer than the dedupe window: an expired record is not restored, and the file is bounded by compaction', async () => {
    const dir = await tempDir()
    const receipt = addressOf(new Uint8Array([1]))
    let live: { key: string; receipt: typeof receipt; expiresAt: number }[] = []
    const { journal } = await DedupeJournal.open(dir, { live: () => live })
    // 1100 deliveries, of which the store still remembers only the last ten.
    const all = Array.from({ length: 1100 }, (_, i) => ({ key: `github:${i}`, receipt, expiresAt: 10_000 + i }))
    for (let i = 0; i < all.length; i += 100) {
      live = all.slice(Math.max(0, i + 100 - 10), i + 100)
      await Promise.all(all.slice(i, i + 100).map((r) => journal.append(r)))
    }
    await journal.close()
    const lines = (await readFile(join(dir, DEDUPE_FILE), 'utf8')).split('\n').filter((l) => l !== '')
    expect(lines.length).toBeLessThan(200)
    const { journal: reopened, records } = await DedupeJournal.open(dir, { live: () => [] })
    await reopened.close()
    expect(records.map((r) => r.key)).toContain('github:1099')
    // The store restores only what is still inside its window.
    const clock = new VirtualClock(50_000)
    const store = new DedupeStore({ clock, ttlMs: 600_000 })
    store.restore([
      { key: 'old', receipt, expiresAt: clock.now() - 1 },
      { key: 'new', receipt, expiresAt: clock.now() + 1000 },
    ])
    expect(store.lookup('old').kind).toBe('new')
    expect(store.lookup('new')).toEqual({ kind: 'stored', receipt })
  })

  it('reads past a torn last line (a crash mid-append) and does not glue the next record onto it', async () => {
    const dir = await tempDir()
    const receipt = addressOf(new Uint8Array([2]))
    await writeFile(join(dir, DEDUPE_FILE), `${JSON.stringify({ k: 'github:a', r: receipt, e: 99 })}\n{"k":"github:b","r":"b3:`)
    const { journal, records } = await DedupeJournal.open(dir, { live: () => [] })
    expect(records.map((r) => r.key)).toEqual(['github:a'])
    await journal.append({ key: 'github:c', receipt, expiresAt: 100 })
    await journal.close()
    const { journal: again, records: after } = await DedupeJournal.open(dir, { live: () => [] })
    await again.close()
    expect(after.map((r) => r.key)).toEqual(['github:a', 'github:c'])
  })
})

describe('a full or read-only disk under the dedupe journal', () => {
  const readyz = async (s: System, target: string): Promise<{ writeReady: boolean; paths: Record<string, boolean>; missing: string[] }> =>
    readJson(await s.transport.request(target, { method: 'GET', path: '/readyz' }))

  it('a full disk answers 503 NotReady disk_full, turns webhooks unready, acknowledges nothing, and recovers when space returns', async () => {
    const fs: Tmpfs | undefined = await mountTmpfs(256 * 1024)
    let dataDir: string
    let clear: () => Promise<void>
    if (fs !== undefined) {
      cleanups.push(() => fs.close())
      dataDir = fs.path
      clear = () => fs.unfill()
    } else {
      // No mount here: the journal is a link to /dev/full, whose writes fail with ENOSPC; the
      // recovery's rewrite replaces the link with a file.
      dataDir = await tempDir()
      await symlink('/dev/full', join(dataDir, DEDUPE_FILE))
      clear = () => Promise.resolve()
    }
    sys = await system({ dataDir })
    const s = sys
    await fs?.fill()
    const refused = await deliver(s, 'interop', 'd-full')
    expect(refused.status).toBe(503)
    expect(refused.headers['retry-after']).toBe('1')
    expect(await readJson(refused)).toMatchObject({ error: { code: 'NotReady', details: { reason: 'disk_full' } } })
    const r = await readyz(s, 'interop')
    expect(r).toMatchObject({ writeReady: false, paths: { webhooks: false, uploads: true, reads: true } })
    expect(r.missing).toContain('disk')
    expect(s.interop.health().writeReady).toBe(false)
    // While the disk is full, deliveries are refused before any work.
    const puts = s.slow.putChunks
    expect((await deliver(s, 'interop', 'd-full-2')).status).toBe(503)
    expect(s.slow.putChunks).toBe(puts)

    await clear()
    await s.clock.advance(1100) // the dedupe-journal task probes every second
    // The probe rewrites the journal on the real disk: wait for that I/O.
    await expect.poll(() => s.interop.health().paths.webhooks).toBe(true)
    expect((await readyz(s, 'interop')).paths.webhooks).toBe(true)
    expect(s.interop.health().writeReady).toBe(true)
    // The refused delivery, retried by its provider, is acknowledged now (and remembered on disk).
    const retried = await deliver(s, 'interop', 'd-full')
    expect(retried.status).toBe(202)
    expect(await readFile(join(dataDir, DEDUPE_FILE), 'utf8')).toContain(`"r":"${(await readJson<{ receipt: string }>(retried)).receipt}"`)
  })

  it('a read-only disk answers 503 NotReady read_only until it is writable again', async () => {
    const fs = await mountTmpfs(256 * 1024)
    if (fs === undefined) {
      // Only an unprivileged run cannot mount: the injected full disk above covers the fault path
      // there, and the reason mapping (EROFS → read_only) is core's disk-fault test.
      expect(process.getuid?.()).not.toBe(0)
      return
    }
    cleanups.push(() => fs.close())
    await fs.setReadOnly(true)
    sys = await system({ dataDir: fs.path })
    const s = sys
    const refused = await deliver(s, 'interop', 'd-ro')
    expect(refused.status).toBe(503)
    expect(await readJson(refused)).toMatchObject({ error: { code: 'NotReady', details: { reason: 'read_only' } } })
    expect((await readyz(s, 'interop')).paths.webhooks).toBe(false)
    await fs.setReadOnly(false)
    await s.clock.advance(1100)
    await expect.poll(() => s.interop.health().paths.webhooks).toBe(true)
    expect((await deliver(s, 'interop', 'd-ro')).status).toBe(202)
  })

  it('amnesia refuses a data directory', async () => {
    await expect(createInteropService({ amnesia: true, dataDir: '/tmp/x' })).rejects.toMatchObject({ code: 'Malformed', details: { path: 'dataDir' } })
  })
})
