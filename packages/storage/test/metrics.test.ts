/**
 * Every metric of storage's declaration (the README's table) is driven here by the condition it
 * counts, and seen to move — no presence-only checks (issue 21). A test also fails when a metric
 * is added to the declaration without a driver below.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { RonRequest, RonResponse } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'
import { corruptStoredBytes } from '@ron/storage/testing'
import { createMemoryStore } from '../src/index.js'
import { STORAGE_METRICS } from '../src/metrics.js'
import { BUFFERED_BODY_BYTES } from '../src/routes/objects.js'
import { bytes, cluster, metricValue, once, type Cluster } from './helpers.js'

let c: Cluster | undefined
const after: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const f of after.splice(0).reverse()) await f()
  await c?.close()
  c = undefined
})

/** An index stand-in answering every call with `status`. */
function fakeIndex(status: number): { dispatch(req: RonRequest): Promise<RonResponse> } {
  return {
    async dispatch(req) {
      for await (const _ of req.body) {
        /* consume */
      }
      return { status, headers: { 'content-type': 'application/json' }, body: (async function* () {})() }
    },
  }
}

/** A peer that holds every request until released. */
function stuckPeer(): { target: { dispatch(req: RonRequest): Promise<RonResponse> }; release(): void; calls: () => number } {
  const gate = deferred()
  let calls = 0
  return {
    target: {
      async dispatch() {
        calls++
        await gate.promise
        return { status: 503, headers: {}, body: (async function* () {})() }
      },
    },
    release: () => gate.resolve(),
    calls: () => calls,
  }
}

type Driver = () => Promise<void>

const DRIVERS: Record<keyof typeof STORAGE_METRICS.table, Driver> = {
  async integrity_failures_total() {
    c = await cluster(['storage'], () => ({ chunkSize: 1024 }))
    const n = c.node()
    const { address } = await n.client.put(bytes(4096, 1))
    expect(await metricValue(n.svc, 'integrity_failures_total')).toBe(0)
    await corruptStoredBytes(n.svc.store, address, 100)
    await expect(n.anon.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    expect(await metricValue(n.svc, 'integrity_failures_total')).toBe(1)
  },

  async put_commit_seconds() {
    c = await cluster(['storage'])
    const n = c.node()
    expect(await metricValue(n.svc, 'put_commit_seconds')).toBe(0)
    await n.client.put('one')
    await n.client.put('two')
    expect(await metricValue(n.svc, 'put_commit_seconds')).toBe(2)
  },

  async work_wait_seconds() {
    c = await cluster(['storage'], () => ({ getConcurrency: 1 }))
    const n = c.node()
    const { address } = await n.client.put(bytes(BUFFERED_BODY_BYTES + 1, 2))
    const before = await metricValue(n.svc, 'work_wait_seconds', { kind: 'read' })
    const held = await c.request('storage', 'GET', `/o/${address}`) // streams: holds the only reader slot
    const waiting = c.request('storage', 'HEAD', `/o/${address}`)
    await held.dump()
    expect((await waiting).status).toBe(200)
    expect(await metricValue(n.svc, 'work_wait_seconds', { kind: 'read' })).toBe(before + 2)
  },

  async work_active() {
    c = await cluster(['storage'])
    const n = c.node()
    const { address } = await n.client.put(bytes(BUFFERED_BODY_BYTES + 1, 3))
    expect(await metricValue(n.svc, 'work_active', { kind: 'read' })).toBe(0)
    const held = await c.request('storage', 'GET', `/o/${address}`)
    expect(await metricValue(n.svc, 'work_active', { kind: 'read' })).toBe(1)
    await held.dump()
    expect(await metricValue(n.svc, 'work_active', { kind: 'read' })).toBe(0)
  },

  async repair_wait_seconds() {
    // A budget of 64 KiB/s with a 1 KiB burst: 8 KiB of repair waits about 0.1 s for tokens.
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024, repair: { auto: false, bytesPerSec: 64 * 1024, burst: 1024 } }))
    const a = c.node('storage-a')
    const { address } = await a.client.put(bytes(8192, 4))
    await c.node('storage-b').svc.store.delete(address)
    expect(await metricValue(a.svc, 'repair_wait_seconds_count')).toBe(0)
    await a.svc.runRepair()
    await a.svc.repairIdle()
    expect(await metricValue(a.svc, 'repair_wait_seconds_count')).toBeGreaterThanOrEqual(1)
    expect(await metricValue(a.svc, 'repair_wait_seconds_sum')).toBeGreaterThan(0.05)
  },

  async repair_skipped_total() {
    // Three nodes, rf 3, every object on two of them: one rebalance item each, queue of one.
    c = await cluster(['storage-a', 'storage-b', 'storage-c'], () => ({ rf: 3, chunkSize: 1024, repair: { auto: false, queue: 1, workers: 1 } }))
    const a = c.node('storage-a')
    for (let i = 0; i < 4; i++) {
      const d = bytes(2000, 10 + i)
      await a.svc.store.put(once(d))
      await c.node('storage-b').svc.store.put(once(d))
    }
    expect(await metricValue(a.svc, 'repair_skipped_total', { reason: 'full' })).toBe(0)
    const plan = await a.svc.runRepair()
    expect(plan.skipped).toBeGreaterThan(0)
    expect(await metricValue(a.svc, 'repair_skipped_total', { reason: 'full' })).toBe(plan.skipped)
    await a.svc.repairIdle()
  },

  async repair_bytes_total() {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024 }))
    const a = c.node('storage-a')
    const { address } = await a.client.put(bytes(3000, 5))
    await c.node('storage-b').svc.store.delete(address)
    await a.svc.runRepair()
    await a.svc.repairIdle()
    expect(await metricValue(a.svc, 'repair_bytes_total')).toBe(3000)
  },

  async repairs_total() {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024 }))
    const a = c.node('storage-a')
    const { address } = await a.client.put(bytes(2000, 6))
    await c.node('storage-b').svc.store.delete(address)
    await a.svc.runRepair()
    await a.svc.repairIdle()
    expect(await metricValue(a.svc, 'repairs_total', { outcome: 'ok' })).toBe(1)
  },

  async replicas_written_total() {
    // writeQuorum 1: the copy to the peer is written in the background.
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 1 }))
    const a = c.node('storage-a')
    expect(await metricValue(a.svc, 'replicas_written_total', { peer: 'storage-b' })).toBe(0)
    const { address } = await a.client.put('replicate me')
    await expect.poll(() => metricValue(a.svc, 'replicas_written_total', { peer: 'storage-b' }), { timeout: 10_000, interval: 5 }).toBe(1)
    expect(await c.node('storage-b').svc.store.stat(address)).toBeDefined()
  },

  async replication_failures_total() {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2 }))
    const a = c.node('storage-a')
    c.transport.mount('storage-b', { dispatch: () => Promise.reject(new Error('peer down')) })
    await expect(a.client.put('no quorum')).rejects.toMatchObject({ code: 'Unavailable', details: { reason: 'write_quorum' } })
    expect(await metricValue(a.svc, 'replication_failures_total', { peer: 'storage-b' })).toBe(1)
  },

  async replication_skipped_total() {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 1, replicationQueue: 1 }))
    const a = c.node('storage-a')
    const peer = stuckPeer()
    c.transport.mount('storage-b', peer.target)
    after.push(() => peer.release())
    // Two replicators take a job each and hang on the peer; one more job fills the queue.
    for (let i = 0; i < 6; i++) await a.client.put(`object ${i}`)
    expect(await metricValue(a.svc, 'replication_skipped_total', { reason: 'full' })).toBeGreaterThanOrEqual(1)
  },

  async announcements_total() {
    c = await cluster(['storage'], () => ({ announce: { target: 'index' } }))
    c.transport.mount('index', fakeIndex(201))
    await c.node().client.put('announce me')
    await expect.poll(() => metricValue(c!.node().svc, 'announcements_total'), { timeout: 10_000, interval: 5 }).toBe(1)
  },

  async announce_failures_total() {
    c = await cluster(['storage'], () => ({ announce: { target: 'index' } }))
    c.transport.mount('index', fakeIndex(503))
    await c.node().client.put('announce me')
    await expect.poll(() => metricValue(c!.node().svc, 'announce_failures_total'), { timeout: 10_000, interval: 5 }).toBeGreaterThanOrEqual(1)
  },

  async storage_objects() {
    await usage('storage_objects', (n) => n, 2)
  },

  async storage_bytes() {
    await usage('storage_bytes', (n) => n, 'ab'.length + 'cde'.length)
  },

  async storage_free_bytes() {
    const clock = new VirtualClock(1_700_000_000_000)
    let free = 1 << 30
    const inner = createMemoryStore()
    const backend = Object.assign(Object.create(inner) as typeof inner, { probe: () => Promise.resolve({ writable: true, freeBytes: free }) })
    after.push(() => inner.close())
    c = await cluster(['storage'], () => ({ clock, backend, writeReadiness: { probeIntervalMs: 1000 } }))
    expect(await metricValue(c.node().svc, 'storage_free_bytes')).toBe(1 << 30)
    free = 1 << 29
    await clock.advance(1000)
    await expect.poll(() => metricValue(c!.node().svc, 'storage_free_bytes'), { timeout: 10_000, interval: 5 }).toBe(1 << 29)
  },
}

/** Usage gauges: sampled by the disk probe at most once a minute. */
async function usage(name: string, _f: (n: number) => number, expected: number): Promise<void> {
  const clock = new VirtualClock(1_700_000_000_000)
  c = await cluster(['storage'], () => ({ clock, writeReadiness: { probeIntervalMs: 1000 } }))
  const n = c.node()
  expect(await metricValue(n.svc, name)).toBe(0)
  await n.client.put('ab')
  await n.client.put('cde')
  await clock.advance(61_000)
  await expect.poll(() => metricValue(n.svc, name), { timeout: 10_000, interval: 5 }).toBe(expected)
  expect(n.svc.usage()).toMatchObject({ objects: 2, bytes: 5 })
}

describe('storage metrics move when their condition happens', () => {
  it('every metric of the declaration has a driver here', () => {
    expect(Object.keys(DRIVERS).sort()).toEqual(Object.keys(STORAGE_METRICS.table).sort())
  })

  for (const [name, drive] of Object.entries(DRIVERS)) {
    it(name, drive)
  }
})
