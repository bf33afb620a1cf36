/**
 * What operators see (issue 8, problem 5/item 5) and browser clients (item 6): metrics at startup,
 * shutdown order, live reload, the admin listing, usage, and CORS at the header level.
 */
import { readFile } from 'node:fs/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, collectBytes } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createStorageService } from '../src/index.js'
import type { StorageService } from '../src/index.js'
import { STORAGE_METRICS } from '../src/metrics.js'
import { BUFFERED_BODY_BYTES } from '../src/routes/objects.js'
import { bytes, cluster, type Cluster } from './helpers.js'

let c: Cluster | undefined
const extra: StorageService[] = []
afterEach(async () => {
  await c?.close()
  c = undefined
  for (const s of extra.splice(0)) await s.close()
})

describe('metrics', () => {
  it('a fresh /metrics shows every seed metric at zero with its labels, busy_rejections_total per endpoint', async () => {
    c = await cluster(['storage'])
    const res = await c.request('storage', 'GET', '/metrics')
    const text = new TextDecoder().decode(await collectBytes(res.body))
    for (const line of [
      'busy_rejections_total{endpoint="PUT /o",queue="work",service="storage"} 0',
      'busy_rejections_total{endpoint="GET /o/:addr",queue="work",service="storage"} 0',
      'queue_depth{queue="work",service="storage"} 0',
      'queue_depth{queue="repair",service="storage"} 0',
      'queue_dropped_total{queue="events",service="storage"} 0',
      'tasks_aborted_total{kind="request",service="storage"} 0',
      'tasks_spawned_total{kind="repair-worker",service="storage"}',
      'io_timeouts_total{op="read_rate",service="storage"} 0',
      'io_timeouts_total{op="read",service="storage"} 0',
      'bus_lagged_total{topic="events",service="storage"} 0',
      'repair_wait_seconds_count{service="storage"} 0',
      'work_active{kind="write",service="storage"} 0',
      'integrity_failures_total{service="storage"} 0',
    ]) {
      expect(text, line).toContain(line)
    }
  })

  it('the README lists every storage metric', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    for (const name of Object.keys(STORAGE_METRICS.table)) expect(readme, name).toContain(`\`${name}`)
  })
})

describe('reload()', () => {
  it('applies limits live, refuses immutable keys and rolls back invalid configs', async () => {
    c = await cluster(['storage'])
    const node = c.node()
    await node.svc.reload({ maxObjectBytes: 10 })
    await expect(node.client.put('more than ten bytes')).rejects.toMatchObject({ code: 'OverLimit', details: { source: 'maxObjectBytes', limit: 10 } })
    await expect(node.svc.reload({ dataDir: '/elsewhere' })).rejects.toMatchObject({ code: 'Malformed', details: { reason: 'immutable' } })
    // rf 3 with no peers is invalid: the whole reload is rolled back.
    await expect(node.svc.reload({ maxObjectBytes: 1000, rf: 3 })).rejects.toMatchObject({ code: 'Malformed' })
    await expect(node.client.put('more than ten bytes')).rejects.toMatchObject({ code: 'OverLimit', details: { limit: 10 } })
    await node.svc.reload({ maxObjectBytes: '1KiB', writers: 2, http: { minBytesPerSec: '1KiB' } })
    await expect(node.client.put('more than ten bytes')).resolves.toMatchObject({ created: true })
  })

  it('adds a peer live: new puts replicate to it', async () => {
    c = await cluster(['storage-a', 'storage-b'], (name) => (name === 'storage-a' ? { peers: [] } : {}))
    const a = c.node('storage-a')
    const first = await a.client.put(bytes(2000, 1))
    expect(await c.node('storage-b').svc.store.stat(first.address)).toBeUndefined()
    await a.svc.reload({ peers: ['storage-b'], rf: 2, writeQuorum: 2 })
    const second = await a.client.put(bytes(2000, 2))
    expect(await c.node('storage-b').svc.store.stat(second.address)).toMatchObject({ size: 2000 })
  })
})

describe('service-wide HTTP limits', () => {
  it('http.maxInflight and http.maxRps answer 429 Busy with their reason; both reload live', async () => {
    const clock = new VirtualClock()
    c = await cluster(['storage'], () => ({ clock, http: { maxInflight: 1 } }))
    // Larger than a buffered body, so the answer streams and holds its admission until read.
    const { address } = await c.node().client.put(bytes(BUFFERED_BODY_BYTES + 1, 3))
    const held = await c.request('storage', 'GET', `/o/${address}`) // body not consumed: still in progress
    const over = await c.request('storage', 'GET', `/o/${address}`)
    expect(over.status).toBe(429)
    expect(await over.json()).toMatchObject({ error: { code: 'Busy', details: { reason: 'max_inflight', limit: 1 } } })
    await held.dump()
    await c.node().svc.reload({ http: { maxInflight: 100, maxRps: 2 } })
    for (let i = 0; i < 2; i++) {
      const ok = await c.request('storage', 'HEAD', `/o/${address}`)
      expect(ok.status).toBe(200)
      await ok.dump()
    }
    const fast = await c.request('storage', 'HEAD', `/o/${address}`)
    expect(fast.status).toBe(429)
    await fast.dump()
    await clock.advance(1000)
    const later = await c.request('storage', 'HEAD', `/o/${address}`)
    expect(later.status).toBe(200)
    await later.dump()
  })
})

describe('admin listing and usage', () => {
  it('GET /o pages through objects and pins in address order (storage:admin)', async () => {
    c = await cluster(['storage'])
    const node = c.node()
    const addresses: string[] = []
    for (let i = 0; i < 5; i++) addresses.push((await node.client.put(bytes(100 + i, 50 + i))).address)
    await node.client.pin(addresses[2]!)
    addresses.sort()
    const denied = await c.request('storage', 'GET', '/o', { authorization: `Bearer ${c.tokens.write}` })
    expect(denied.status).toBe(403)
    await denied.dump()
    const seen: { address: string; pinned: boolean; size: number | null }[] = []
    let cursor: string | null = ''
    for (let pages = 0; cursor !== null && pages < 10; pages++) {
      const res = await c.request('storage', 'GET', `/o?limit=2&cursor=${cursor}`, { authorization: `Bearer ${c.tokens.admin}` })
      const body: { objects: typeof seen; cursor: string | null } = await res.json()
      seen.push(...body.objects)
      cursor = body.cursor
    }
    expect(seen.map((x) => x.address)).toEqual(addresses)
    expect(seen.filter((x) => x.pinned)).toHaveLength(1)
    const bad = await c.request('storage', 'GET', '/o?limit=0', { authorization: `Bearer ${c.tokens.admin}` })
    expect(bad.status).toBe(400)
    await bad.dump()
  })

  it('GET /status reports the node, its endpoint and usage (objects, bytes, free space)', async () => {
    const transport = new MemoryTransport()
    const clock = new VirtualClock()
    const svc = await createStorageService(
      { nodeId: 'n0000000000000001', advertise: 'http://n1:7701', clock, repair: { auto: false }, drainReadWindowMs: 0, writeReadiness: { probeIntervalMs: 1000 } },
      transport,
    )
    extra.push(svc)
    // Usage is sampled by the disk-probe task, which counts once as the service starts (empty store).
    expect(svc.usage()).toMatchObject({ objects: 0, bytes: 0 })
    await svc.store.put(
      (async function* () {
        yield bytes(1234, 3)
      })(),
    )
    // Objects and bytes are counted again at most once a minute.
    await clock.advance(61_000)
    transport.mount('storage', svc)
    const res = await transport.request('storage', { method: 'GET', path: '/status' })
    expect(await res.json()).toMatchObject({ node: 'n0000000000000001', endpoint: 'http://n1:7701', usage: { objects: 1, bytes: 1234 } })
  })
})

describe('CORS (header level)', () => {
  it('public reads answer *, writes preflight from allowed origins, and the object headers are exposed', async () => {
    c = await cluster(['storage'], () => ({ cors: { writeOrigins: ['https://app.example'] } }))
    const { address } = await c.node().client.put('cors')
    const read = await c.request('storage', 'GET', `/o/${address}`, { origin: 'https://elsewhere.example' })
    expect(read.headers['access-control-allow-origin']).toBe('*')
    const exposed = String(read.headers['access-control-expose-headers']).toLowerCase()
    for (const h of ['etag', 'content-range', 'accept-ranges', 'x-corr-id']) expect(exposed).toContain(h)
    await read.dump()

    const pre = await c.request('storage', 'OPTIONS', '/o', {
      origin: 'https://app.example',
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'authorization, content-encoding, x-expect-address',
    })
    expect(pre.status).toBeLessThan(300)
    expect(pre.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(String(pre.headers['access-control-allow-methods'])).toContain('PUT')
    const allowed = String(pre.headers['access-control-allow-headers']).toLowerCase()
    for (const h of ['authorization', 'content-encoding', 'x-expect-address']) expect(allowed).toContain(h)
    await pre.dump()

    const refused = await c.request('storage', 'OPTIONS', '/o', { origin: 'https://evil.example', 'access-control-request-method': 'PUT' })
    expect(refused.status).toBe(403)
    await refused.dump()
  })
})

describe('CORS reload', () => {
  it('reload() changes the write allow-list for later preflights, and a rolled-back reload keeps the old one', async () => {
    const cl = await cluster(['storage'], () => ({ cors: { writeOrigins: ['https://app.example'] } }))
    c = cl
    const preflight = async (origin: string): Promise<number> => {
      const res = await cl.request('storage', 'OPTIONS', '/o', { origin, 'access-control-request-method': 'PUT' })
      await res.dump()
      return res.status
    }
    expect(await preflight('https://new.example')).toBe(403)
    await cl.node().svc.reload({ cors: { writeOrigins: ['https://new.example'] } })
    expect(await preflight('https://new.example')).toBeLessThan(300)
    expect(await preflight('https://app.example')).toBe(403)
    await expect(cl.node().svc.reload({ cors: { writeOrigins: ['https://x.example'] }, workQueue: -1 })).rejects.toMatchObject({ code: 'Malformed' })
    expect(await preflight('https://new.example')).toBeLessThan(300)
  })
})
