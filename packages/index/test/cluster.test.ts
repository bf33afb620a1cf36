import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport } from '@ron/core'
import type { DispatchTarget, RonRequest, RonResponse } from '@ron/core'
import { VirtualClock, createTestIssuer } from '@ron/core/testing'
import { createStorageClient, createStorageService } from '@ron/storage'
import { createIndexClient, createIndexService } from '../src/index.js'
import type { IndexService } from '../src/index.js'
import { FakeStorage, manifestFor, settle } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** Delays every request to `inner` by `ms` of virtual time (aborted with the request). */
function slow(inner: DispatchTarget, clock: VirtualClock, ms: number): DispatchTarget & { aborted: number } {
  const t = {
    aborted: 0,
    async dispatch(req: RonRequest): Promise<RonResponse> {
      try {
        await clock.sleep(ms, req.signal)
      } catch (e) {
        t.aborted++
        throw e
      }
      return inner.dispatch(req)
    },
  }
  return t
}

describe('a five-node index cluster on MemoryTransport', () => {
  it('resolves within the budget with two dead peers and one slow peer', async () => {
    const clock = new VirtualClock(10_000_000)
    const transport = new MemoryTransport({ clock })
    closers.push(() => transport.close())
    const issuer = createTestIssuer({ clock })
    const storage = new FakeStorage()
    transport.mount('storage', storage)
    const names = ['idx-0', 'idx-1', 'idx-2', 'idx-3', 'idx-4']
    const nodes: IndexService[] = []
    for (const name of names) {
      const svc = await createIndexService({ amnesia: true, nodeId: name, clock, auth: { keys: issuer.keys }, peers: { targets: names.filter((n) => n !== name) } }, transport)
      closers.push(() => svc.close())
      nodes.push(svc)
    }
    // idx-1 and idx-2 are dead (unreachable), idx-3 answers only after 2 s, idx-4 is healthy.
    transport.mount('idx-0', nodes[0]!)
    const slowPeer = slow(nodes[3]!, clock, 2_000)
    transport.mount('idx-3', slowPeer)
    transport.mount('idx-4', nodes[4]!)

    // The name and the content's provider are known only to idx-4 (and the slow idx-3).
    const m = manifestFor('cluster')
    const ma = storage.put(JSON.stringify(m))
    for (const target of ['idx-4']) {
      const c = createIndexClient(transport, { target, token: issuer.mint({ scope: ['index:write', 'index:announce'], aud: 'index' }) })
      await c.setName('site.cluster', ma)
      await c.announce({ address: m.content, node: 'storage-4', endpoint: 'http://storage-4:7701', ttlSec: 600 })
    }
    const client = createIndexClient(transport, { target: 'idx-0' })
    const started = clock.now()
    let doneAt = 0
    const pending = settle(client.resolve('site.cluster').finally(() => (doneAt = clock.now())))
    for (let t = 0; t < 1_200 && doneAt === 0; t += 10) await clock.advance(10)
    const out = await pending
    expect(out.ok).toBe(true)
    if (!out.ok) return
    expect(out.value).toMatchObject({ key: 'site.cluster', manifestAddress: ma, manifest: m, source: 'peer' })
    expect(out.value.providers.map((p) => p.node)).toEqual(['storage-4'])
    expect(doneAt - started).toBeLessThan(1_200)
    // The slow peer's request was cancelled once idx-4 answered.
    expect(slowPeer.aborted).toBe(1)
    await clock.advance(3_000)
  })

  it("a storage node's announcement makes its object resolvable", async () => {
    const transport = new MemoryTransport()
    closers.push(() => transport.close())
    const issuer = createTestIssuer()
    // Real time here (storage's announcer runs on it): no wall-clock budget may decide the outcome.
    const index = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, storageTimeoutMs: 30_000 }, transport)
    closers.push(() => index.close())
    transport.mount('index', index)
    const storage = await createStorageService(
      {
        nodeId: 'node-a',
        advertise: 'storage',
        auth: { keys: issuer.keys },
        announce: { target: 'index', ttlSec: 600 },
        tokens: { token: ({ aud, scope }) => issuer.mint({ aud, scope }) },
      },
      transport,
    )
    closers.push(() => storage.close())
    transport.mount('storage', storage)

    const events = index.subscribe()
    const put = await createStorageClient(transport, { token: issuer.mint({ scope: 'storage:write', aud: 'storage' }) }).put('hello from node-a')
    for await (const e of events) {
      if (e.type === 'provider:added' && e.address === put.address) break
    }
    events.close()
    const r = await createIndexClient(transport).resolve(put.address)
    expect(r).toMatchObject({ key: put.address, source: 'local' })
    // The score is the record's freshness: just under 1 after however long this took in real time.
    expect(r.providers).toMatchObject([{ node: 'node-a', endpoint: 'storage' }])
    expect(r.providers[0]!.score).toBeGreaterThan(0.9)

    // And a name bound to a manifest of that content resolves to node-a.
    const writer = createIndexClient(transport, { token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
    const manifest = await createStorageClient(transport, { token: issuer.mint({ scope: 'storage:write', aud: 'storage' }) }).put(
      JSON.stringify({ content: put.address, size: put.size, type: 'text/plain' }),
    )
    await writer.setName('hello.node-a', manifest.address)
    const byName = await createIndexClient(transport).resolve('hello.node-a')
    expect(byName).toMatchObject({ manifestAddress: manifest.address, manifest: { content: put.address } })
    expect(byName.providers.map((p) => p.node)).toEqual(['node-a'])
  })
})
