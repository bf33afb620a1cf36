/**
 * Regression tests for review findings 3 (a re-upload heals a corrupt copy), 7 (DELETE clears the
 * suspect mark), 8 (416 carries no object caching headers) and 10 (waiting behind a delete or
 * repair is not counted as commit time).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import type { RouteContext } from '@ron/core'
import { createFsStore, createMemoryStore } from '../src/index.js'
import type { BlobStore } from '../src/index.js'
import { ObjectGuard } from '../src/object-guard.js'
import { PinSet } from '../src/pins.js'
import { RepairState } from '../src/repair-state.js'
import type { StorageContext } from '../src/routes/context.js'
import { objectRoutes } from '../src/routes/objects.js'
import { addressOfBytes, bytes, cluster, deferred, once, readAll, type Cluster } from './helpers.js'
import { corruptStoredBytes, flipByte, objectPath } from '@ron/storage/testing'

const tick = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('object routes: healing re-puts, delete vs repair state, 416 headers, commit timing', () => {
  let c: Cluster | undefined
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    await c?.close()
    c = undefined
    for (const f of cleanups.splice(0)) await f()
  })

  it('heals a bit-flipped copy on disk when a client PUTs the right bytes again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-fix-heal-'))
    const store = await createFsStore({ dir, chunkSize: 1024 })
    cleanups.push(async () => {
      await store.close()
      await rm(dir, { recursive: true, force: true })
    })
    c = await cluster(['storage'], () => ({ backend: store }))
    const data = bytes(5000, 3)
    const { address } = await c.node().client.put(data)
    await flipByte(objectPath(store, address), 10) // chunk 0
    await expect(c.node().client.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    const again = await c.node().client.put(data)
    expect(again).toMatchObject({ address, created: false })
    expect(Buffer.from(await c.node().client.getBytes(address)).equals(Buffer.from(data))).toBe(true)
    expect(await store.verify(address)).toEqual({ ok: true, size: 5000, badChunks: [] })
  })

  it('clears the suspect mark of a deleted corrupt object, so repair does not bring it back', async () => {
    const a = createMemoryStore({ chunkSize: 1024 })
    const b = createMemoryStore({ chunkSize: 1024 })
    c = await cluster(['a', 'b'], (name) => ({ backend: name === 'a' ? a : b, rf: 2 }))
    const data = bytes(4000, 4)
    const address = addressOfBytes(data)
    await a.put(once(data))
    await b.put(once(data))
    expect(await corruptStoredBytes(a, address, 1500)).toBe(true)
    // A read finds the corruption and marks the address suspect.
    await expect(c.node('a').client.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    const before = await c.node('a').svc.runRepair({ dryRun: true })
    expect(before.items.map((i) => [i.action, i.address])).toEqual([['replace-corrupt', address]])
    expect(await c.node('a').admin.delete(address)).toBe(true)
    const after = await c.node('a').svc.runRepair({ dryRun: true })
    expect(after.items).toEqual([])
    expect(after.unrepairable).toEqual([])
    expect(await a.stat(address)).toBeUndefined()
  })

  it('DELETE clears the suspect mark when the delete goes ahead, and keeps it when refused', async () => {
    const store = createMemoryStore({ chunkSize: 1024 })
    const repair = new RepairState()
    const pins = await PinSet.open()
    const guard = new ObjectGuard()
    const s = { store, repair, pins, guard, o: { publicReads: true, maxObjectBytes: 1 << 20 }, events: { publish: () => undefined } }
    const route = objectRoutes(s as unknown as StorageContext).find((r) => r.method === 'DELETE')!
    const del = (address: string): Promise<unknown> =>
      Promise.resolve(route.handler({ params: { addr: address }, req: { method: 'DELETE', headers: {} } } as unknown as RouteContext))
    const kept = await store.put(once(bytes(100, 1)))
    const gone = await store.put(once(bytes(100, 2)))
    repair.markSuspect(kept.address, 1)
    repair.markSuspect(gone.address, 1)
    await pins.add(kept.address)
    await expect(del(kept.address)).rejects.toMatchObject({ code: 'Conflict' })
    expect(repair.suspects().sort()).toEqual([kept.address, gone.address].sort()) // refused: still needs repair
    await expect(del(gone.address)).resolves.toMatchObject({ status: 204 })
    expect(repair.suspects()).toEqual([kept.address])
    // Deleting something already gone still drops a stale mark (nothing is left to repair).
    repair.markSuspect(gone.address, 2)
    await expect(del(gone.address)).rejects.toMatchObject({ code: 'NotFound' })
    expect(repair.suspects()).toEqual([kept.address])
    expect(await store.stat(gone.address)).toBeUndefined()
  })

  it('keeps the suspect mark when a DELETE is refused because the object is pinned', async () => {
    const a = createMemoryStore({ chunkSize: 1024 })
    c = await cluster(['a'], () => ({ backend: a }))
    const data = bytes(3000, 5)
    const { address } = await c.node().client.put(data)
    await c.node().client.pin(address)
    await corruptStoredBytes(a, address, 100)
    await expect(c.node().client.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    await expect(c.node().admin.delete(address)).rejects.toMatchObject({ code: 'Conflict' })
    const plan = await c.node().svc.runRepair({ dryRun: true })
    expect(plan.unrepairable.map((u) => u.address)).toEqual([address])
  })

  it('answers 416 with only Content-Range: no ETag, no immutable caching', async () => {
    c = await cluster(['storage'])
    const { address } = await c.node().client.put('twelve bytes')
    const res = await c.request('storage', 'GET', `/o/${address}`, { range: 'bytes=100-' })
    expect(res.status).toBe(416)
    expect(res.headers['content-range']).toBe('bytes */12')
    expect(res.headers['cache-control']).toBeUndefined()
    expect(res.headers.etag).toBeUndefined()
    expect(await res.json()).toMatchObject({ error: { code: 'RangeNotSatisfiable' } })
    // The object answers keep them.
    const ok = await c.request('storage', 'GET', `/o/${address}`, { range: 'bytes=0-3' })
    expect(ok.status).toBe(206)
    expect(ok.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(ok.headers.etag).toBe(`"${address}"`)
    expect(Buffer.from(await readAll(ok.body)).toString()).toBe('twel')
  })

  it('does not count a PUT waiting behind a delete of its address as slow commit time', async () => {
    const clock = new VirtualClock()
    const inner = createMemoryStore({ chunkSize: 1024 })
    const deleting = { reached: deferred(), release: deferred() }
    const gate: { bodyDone?: () => void } = {}
    const store: BlobStore = {
      kind: 'gated',
      chunkSize: 1024,
      put(source, opts) {
        // Tells the test when the whole body has passed through (the route then hashes and keeps).
        const notify = gate.bodyDone
        async function* watched(): AsyncGenerator<Uint8Array> {
          const it = source[Symbol.asyncIterator]()
          for (;;) {
            const r = await it.next()
            if (r.done === true) return
            yield r.value
            if (notify !== undefined && r.value.byteLength > 0) notify()
          }
        }
        return inner.put(watched(), opts)
      },
      open: (a) => inner.open(a),
      stat: (a) => inner.stat(a),
      async delete(a) {
        deleting.reached.resolve()
        await deleting.release.promise
        return inner.delete(a)
      },
      list: (s) => inner.list(s),
      verify: (a, s) => inner.verify(a, s),
      probe: () => inner.probe(),
      close: () => inner.close(),
    }
    c = await cluster(['storage'], () => ({ backend: store, clock, writeReadiness: { slowPutMs: 500, probeIntervalMs: 60_000 } }))
    const data = bytes(2000, 6)
    const { address } = await c.node().client.put(data)
    const del = c.node().admin.delete(address)
    await deleting.reached.promise
    const body = deferred()
    gate.bodyDone = body.resolve
    let settled = false
    const put = c.node().client.put(data).finally(() => (settled = true))
    await body.promise
    await tick() // the PUT reaches beginKeep and waits for the delete
    expect(settled).toBe(false)
    await clock.advance(800) // the delete (or a paced repair) holds the PUT for 800 ms
    deleting.release.resolve()
    expect(await del).toBe(true)
    expect(await put).toMatchObject({ address, created: true })
    expect(c.node().svc.health()).toMatchObject({ writeReady: true })
    await expect(c.node().client.put('next')).resolves.toMatchObject({ created: true })
  })
})
