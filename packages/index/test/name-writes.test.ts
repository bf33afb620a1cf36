import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, metricValue, staticNodeDirectory } from '@ron/core'
import { VirtualClock, until } from '@ron/core/testing'
import { verifyNameRecord } from '../src/index.js'
import { ManifestCache } from '../src/manifest-fetch.js'
import { FakePeer, addr, manifestFor, settle, setup, type Env } from './helpers.js'

let env: Env | undefined
const dirs: string[] = []
afterEach(async () => {
  await env?.close()
  env = undefined
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

describe('name writes have their own pool', () => {
  it('16 writes wait for storage at once with one resolver, and a resolve is still served meanwhile', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ resolverWorkers: 1, workQueue: 1, storageTimeoutMs: 1_000, peers: { targets: ['peer-1'], alpha: 1, beta: 0 } }, { clock })
    const e = env
    const peer = new FakePeer(clock)
    e.transport.mount('peer-1', peer)
    const manifests = await Promise.all(Array.from({ length: 16 }, (_, i) => e.put(manifestFor(`w${i}`))))
    e.storage.stall = clock
    const reads0 = e.storage.reads
    const writes = manifests.map((m, i) => settle(e.client.setName(`n${i}.pool`, m)))
    // All 16 are in flight together (their manifest reads stall): the resolver pool (1) never bounds them.
    await until(() => e.storage.reads - reads0 === 16, 'all 16 writes wait on storage')
    expect(metricValue(await e.index.metricsText(), 'queue_depth', { queue: 'names' })).toBe(0)
    // The resolver is free: a miss goes to the peer and is answered.
    const a = addr('served')
    peer.reply = (key) => (key === a ? { status: 200, json: { key: a, providers: [{ node: 'p', endpoint: 'http://p:7701', score: 1 }], source: 'local', ttlSec: 10 } } : { status: 404 })
    expect((await e.anon.resolve(a)).source).toBe('peer')
    await clock.advance(1_000)
    for (const w of await Promise.all(writes)) expect(w.ok ? undefined : (w.error as { code?: string }).code).toBe('Timeout')
  })

  it('a full names queue answers 429 Busy counted under queue="names"; the writes that got in complete', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ nameWriters: 1, nameQueue: 1, storageTimeoutMs: 1_000 }, { clock })
    const e = env
    const m = await e.put(manifestFor('q'))
    e.storage.stall = clock
    const first = settle(e.client.setName('a.queue', m))
    await until(() => e.storage.reads === 1, 'the first write waits on storage')
    const second = settle(e.client.setName('b.queue', m))
    await until(async () => metricValue(await e.index.metricsText(), 'queue_depth', { queue: 'names' }) === 1, 'one write is queued')
    await expect(e.client.setName('c.queue', m)).rejects.toMatchObject({ code: 'Busy' })
    expect(metricValue(await e.index.metricsText(), 'busy_rejections_total', { endpoint: '/names/:name', queue: 'names' })).toBe(1)
    // The first read times out (504) and keeps nothing; the second write then reads storage itself.
    e.storage.stall = undefined
    await clock.advance(1_000)
    expect((await first).ok).toBe(false)
    expect((await second).ok).toBe(true)
    await expect(e.index.resolve('b.queue')).resolves.toMatchObject({ manifestAddress: m })
  })

  it('concurrent writes to LMDB all answer once durable and are there after a reopen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-index-names-'))
    dirs.push(dir)
    env = await setup({ amnesia: false, dataDir: join(dir, 'index') })
    const e = env
    const manifests = await Promise.all(Array.from({ length: 4 }, (_, i) => e.put(manifestFor(`d${i}`))))
    const results = await Promise.all(Array.from({ length: 48 }, (_, i) => e.client.setName(`n${i}.durable`, manifests[i % 4]!)))
    expect(results.map((r) => r.seq)).toEqual(Array.from({ length: 48 }, () => 1))
    await e.close()
    env = await setup({ amnesia: false, dataDir: join(dir, 'index') })
    for (let i = 0; i < 48; i++) expect(await env.index.resolve(`n${i}.durable`)).toMatchObject({ manifestAddress: manifests[i % 4] })
  })
})

describe('signed records under concurrent writes of one name', () => {
  it('each write gets its own seq and a record that verifies for exactly what it bound', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-index-names-'))
    dirs.push(dir)
    env = await setup({ amnesia: false, dataDir: join(dir, 'index') })
    const e = env
    const manifests = await Promise.all(Array.from({ length: 8 }, (_, i) => e.put(manifestFor(`s${i}`))))
    // Eight unconditional writes of one name at once: every one read the same state before its
    // transaction, so all but the first must be signed again inside it.
    const results = await Promise.all(manifests.map((m) => e.client.setName('one.seq', m)))
    expect(results.map((r) => r.seq).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    const last = results.find((r) => r.seq === 8)!
    const answer = (await e.index.resolve('one.seq', { peer: true })) as { manifestAddress: string; record: unknown }
    expect(answer.manifestAddress).toBe(last.manifestAddress)
    const nodes = staticNodeDirectory([{ id: e.index.identity.id, nodeKey: e.index.identity.publicKey, services: {} }])
    const v = verifyNameRecord(answer.record, 'one.seq', nodes)
    expect(v).toMatchObject({ ok: true, record: { seq: 8, manifestAddress: last.manifestAddress, node: e.index.identity.id } })
  })
})

describe('the manifest check', () => {
  it('binding more names to a manifest verified within a minute reads storage once; later it reads again', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    const m = await env.put(manifestFor('once'))
    const r0 = env.storage.reads
    for (let i = 0; i < 5; i++) await env.client.setName(`n${i}.once`, m)
    expect(env.storage.reads - r0).toBe(1)
    // Rebinding a name to the manifest it is bound to needs no read either.
    await clock.advance(61_000)
    await env.client.setName('n0.once', m)
    expect(env.storage.reads - r0).toBe(1)
    // Past the minute another name reads it again: a manifest storage has lost is refused.
    env.storage.objects.delete(m)
    await expect(env.client.setName('n9.once', m)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'missing' } })
    expect(env.storage.reads - r0).toBe(2)
  })

  it('nothing refused is kept: a manifest that failed its check is checked again', async () => {
    env = await setup()
    const good = manifestFor('good')
    const a = addressOf(new TextEncoder().encode(JSON.stringify(good)))
    // Storage holds other bytes under the address: 422 integrity, and nothing is kept.
    env.storage.objects.set(a, new TextEncoder().encode(JSON.stringify(manifestFor('evil'))))
    await expect(env.client.setName('x.check', a)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'integrity' } })
    await expect(env.client.setName('x.check', a)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'integrity' } })
    env.storage.objects.set(a, new TextEncoder().encode(JSON.stringify(good)))
    await expect(env.client.setName('x.check', a)).resolves.toMatchObject({ manifestAddress: a })
  })

  it('ManifestCache is bounded by bytes and by time, oldest out first', () => {
    const text = (n: number): string => 'x'.repeat(n)
    const c = new ManifestCache(4_000, 1_000)
    const m = (n: number): { manifest: ReturnType<typeof manifestFor>; text: string } => ({ manifest: manifestFor(n), text: text(400) })
    for (let i = 0; i < 5; i++) c.set(addr(i), m(i), 0)
    // 5 × 800 bytes fill the 4 000: a sixth pushes the oldest out.
    expect(c.bytes).toBe(4_000)
    c.set(addr(5), m(5), 10)
    expect(c.get(addr(0), 10)).toBeUndefined()
    expect(c.get(addr(1), 10)).toBeDefined()
    expect(c.size).toBe(5)
    // A manifest over a quarter of the bound is not kept.
    c.set(addr(6), { manifest: manifestFor(6), text: text(600) }, 10)
    expect(c.get(addr(6), 10)).toBeUndefined()
    // Past the TTL nothing is served, and a lookup releases what expired.
    expect(c.get(addr(5), 1_010)).toBeUndefined()
    expect(c.size).toBe(0)
    expect(c.bytes).toBe(0)
  })
})
