 
import { afterEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import { addressOf } from '@ron/core'
import type { Address, RonRequest, RonResponse } from '@ron/core'
import { createMemoryStore, placement } from '../src/index.js'
import type { BlobStore } from '../src/index.js'
import { addressOfBytes, bytes, cluster, deferred, metricValue, tempDir, type Cluster } from './helpers.js'

const NODES = ['storage-a', 'storage-b', 'storage-c']
const tick = async (n = 10): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('background work', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('replicates to the other placement node after a writeQuorum-1 put', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    let data = bytes(4000, 1)
    for (let seed = 1; placement(addressOfBytes(data), NODES, 2)[0] !== 'storage-a'; seed++) data = bytes(4000, seed)
    const address = addressOfBytes(data)
    const other = placement(address, NODES, 2)[1]!
    const res = await c.node('storage-a').client.put(data)
    expect(res.created).toBe(true)
    await expect.poll(() => c!.node(other).svc.store.stat(address), { timeout: 20_000, interval: 5 }).toEqual({ size: 4000 })
    expect(await metricValue(c.node('storage-a').svc, 'replicas_written_total')).toBe(1)
  })

  it('re-announces every local object each interval, on the virtual clock', async () => {
    const clock = new VirtualClock()
    const seen: Address[] = []
    c = await cluster(['storage'], () => ({ clock, announce: { target: 'index', intervalMs: 10_000, ttlSec: 20 } }))
    c.transport.mount('index', {
      async dispatch(req) {
        let body = ''
        for await (const ch of req.body) body += Buffer.from(ch).toString()
        seen.push((JSON.parse(body) as { address: Address }).address)
        return { status: 204, headers: {}, body: (async function* () {})() }
      },
    })
    const one = await c.node().client.put('one')
    const two = await c.node().client.put('two')
    await expect.poll(() => seen.length, { timeout: 20_000, interval: 5 }).toBe(2)
    await clock.advance(10_000)
    await expect.poll(() => seen.length, { timeout: 20_000, interval: 5 }).toBe(4)
    expect(seen.slice(2).sort()).toEqual([one.address, two.address].sort())
  })

  it('retries an announcement the index refused with a retryable error instead of waiting for the next refresh', async () => {
    const clock = new VirtualClock()
    const seen: Address[] = []
    const refusals = 1
    c = await cluster(['storage'], () => ({ clock, announce: { target: 'index' } }))
    const index = refusingIndex(refusals, seen)
    c.transport.mount('index', index)
    const one = await c.node().client.put('one')
    // The retry sleeps a jittered 50–100 ms on the virtual clock; nothing else moves time.
    await expect.poll(async () => { await clock.advance(100); return seen.length }, { timeout: 20_000, interval: 5 }).toBe(1)
    expect(seen).toEqual([one.address])
    expect(index.refused()).toBe(1)
  })

  it('sends an announcement that failed all its retries again after a delay, not only at the next refresh', async () => {
    const clock = new VirtualClock()
    const seen: Address[] = []
    const refusals = 5 // more than one announcement's three tries
    c = await cluster(['storage'], () => ({ clock, announce: { target: 'index' } }))
    c.transport.mount('index', refusingIndex(refusals, seen))
    const one = await c.node().client.put('one')
    // Well before the refresh (ttlSec / 2 = 30 min): the deferred retry comes after ~1 s.
    await expect.poll(async () => { await clock.advance(100); return seen.length }, { timeout: 20_000, interval: 5 }).toBe(1)
    expect(seen).toEqual([one.address])
    expect(clock.now()).toBeLessThan(60_000)
  })

  it('marks writes unready after a slow commit and recovers on a later probe', async () => {
    const clock = new VirtualClock()
    const inner = createMemoryStore({ chunkSize: 1024 })
    const gate = { wait: undefined as Promise<void> | undefined, reached: undefined as (() => void) | undefined }
    const slow: BlobStore = {
      kind: 'slow',
      chunkSize: 1024,
      async put(source, opts) {
        const chunks: Uint8Array[] = []
        for await (const ch of source) chunks.push(ch)
        // The body is complete: the route's beforeCommit starts commit time here, as a real
        // store calls it after its hashing pass; the slow part (the gate) is the commit.
        const data = Buffer.concat(chunks)
        await opts?.beforeCommit?.(addressOf(data), data.byteLength)
        gate.reached?.()
        if (gate.wait) await gate.wait
        const { beforeCommit: _done, ...rest } = opts ?? {}
        return inner.put(
          (async function* () {
            yield data
          })(),
          rest,
        )
      },
      open: (a) => inner.open(a),
      stat: (a) => inner.stat(a),
      delete: (a) => inner.delete(a),
      list: (s) => inner.list(s),
      verify: (a, s) => inner.verify(a, s),
      probe: () => inner.probe(),
      close: () => inner.close(),
    }
    c = await cluster(['storage'], () => ({ backend: slow, clock, writeReadiness: { slowPutMs: 500, probeIntervalMs: 1000 } }))
    const reached = deferred()
    const release = deferred()
    gate.reached = reached.resolve
    gate.wait = release.promise
    const put = c.node().client.put('slow object')
    await reached.promise
    await clock.advance(800) // the commit "takes" 800 ms of virtual time
    gate.wait = undefined
    gate.reached = undefined
    release.resolve()
    await put
    expect(c.node().svc.health()).toMatchObject({ ready: true, writeReady: false })
    await expect(c.node().client.put('refused')).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'slow' } })
    await clock.advance(3000)
    await tick()
    expect(c.node().svc.health()).toMatchObject({ ready: true, writeReady: true })
    await expect(c.node().client.put('accepted')).resolves.toMatchObject({ created: true })
  })

  it('publishes object events on the events broadcast', async () => {
    c = await cluster(['storage'])
    const sub = c.node().svc.subscribe()
    try {
      const { address } = await c.node().client.put('evented')
      await c.node().client.pin(address)
      await c.node().client.unpin(address)
      await c.node().admin.delete(address)
      const types: string[] = []
      for (let r = sub.tryRecv(); r !== undefined; r = sub.tryRecv()) if ('value' in r) types.push(r.value.type)
      expect(types).toEqual(['object:stored', 'object:pinned', 'object:unpinned', 'object:deleted'])
    } finally {
      sub.close()
    }
  })
})

describe('lifecycle', () => {
  it('keeps pins across a restart on the same dataDir', async () => {
    const { dir, cleanup } = await tempDir()
    try {
      const first = await cluster(['storage'], () => ({ dataDir: dir }))
      const { address } = await first.node().client.put('pinned across restarts')
      await first.node().client.pin(address)
      await first.close()
      const second = await cluster(['storage'], () => ({ dataDir: dir }))
      try {
        await expect(second.node().admin.delete(address)).rejects.toMatchObject({ code: 'Conflict' })
        expect((await second.node().anon.status(address)).pinned).toBe(true)
      } finally {
        await second.close()
      }
    } finally {
      await cleanup()
    }
  })

  it('leaves no timer behind after close(), and a second close() is harmless', async () => {
    const clock = new VirtualClock()
    const c = await cluster(NODES, () => ({ clock, rf: 2, announce: { target: 'index' }, repair: { auto: true, intervalMs: 1000 } }))
    await c.node('storage-a').client.put('x')
    await clock.advance(1500)
    await tick()
    for (const n of c.nodes) await n.svc.close()
    await c.close()
    expect(clock.pending).toBe(0)
  })
})

/** A stand-in index that answers 503 NotReady to the first `refusals` announcements, then records the rest in `seen`. */
function refusingIndex(refusals: number, seen: Address[]): { dispatch(req: RonRequest): Promise<RonResponse>; refused(): number } {
  let left = refusals
  return {
    refused: () => Math.min(refusals, refusals - left),
    async dispatch(req) {
      let body = ''
      for await (const ch of req.body) body += Buffer.from(ch).toString()
      if (left-- > 0) {
        const envelope = JSON.stringify({ error: { code: 'NotReady', message: 'starting', retryable: true, corr_id: '', details: {} } })
        return { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '0' }, body: (async function* () { yield Buffer.from(envelope) })() }
      }
      seen.push((JSON.parse(body) as { address: Address }).address)
      return { status: 204, headers: {}, body: (async function* () {})() }
    },
  }
}
