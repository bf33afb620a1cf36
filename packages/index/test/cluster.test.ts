import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport } from '@ron/core'
import type { DispatchTarget, RonRequest, RonResponse } from '@ron/core'
import { VirtualClock, createTestIssuer } from '@ron/core/testing'
import { createStorageClient, createStorageService } from '@ron/storage'
import { createIndexClient, createIndexService } from '../src/index.js'
import type { IndexService } from '../src/index.js'
import { FakeStorage, manifestFor, settle, testNode } from './helpers.js'
import { staticNodeDirectory } from '@ron/core'

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
    // Each index knows every node's key: name answers are believed when their home signed them.
    const members = names.map((_, i) => testNode({ storage: `http://storage-${i}:7701` }))
    for (const [i, name] of names.entries()) {
      const me = members[i]!
      const dir = staticNodeDirectory([me.known, ...members.filter((m) => m !== me).map((m) => m.known)])
      const svc = await createIndexService({ amnesia: true, nodeId: name, clock, auth: { keys: issuer.keys }, peers: { targets: names.filter((n) => n !== name) }, identity: me.identity, nodes: dir }, transport)
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
      const c = createIndexClient(transport, { target, token: issuer.mint({ scope: ['index:write'], aud: 'index' }) })
      // A create first asks the peers whether the name is homed elsewhere (the slow peer holds
      // that up to the budget): virtual time moves on meanwhile.
      const created = settle(c.setName('site.cluster', ma))
      for (let t = 0; t < 1_300; t += 50) await clock.advance(50)
      expect((await created).ok).toBe(true)
      // The storage node of idx-4's node announces its own copy, at a URL that node advertises.
      const storage4 = createIndexClient(transport, { target, token: issuer.mint({ sub: `node:${members[4]!.identity.id}`, scope: ['index:announce'], aud: 'index' }) })
      await storage4.announce({ address: m.content, node: members[4]!.identity.id, endpoint: 'http://storage-4:7701', ttlSec: 600 })
    }
    const client = createIndexClient(transport, { target: 'idx-0' })
    const abortedBefore = slowPeer.aborted
    const started = clock.now()
    let doneAt = 0
    const pending = settle(client.resolve('site.cluster').finally(() => (doneAt = clock.now())))
    for (let t = 0; t < 1_200 && doneAt === 0; t += 10) await clock.advance(10)
    const out = await pending
    expect(out.ok).toBe(true)
    if (!out.ok) return
    expect(out.value).toMatchObject({ key: 'site.cluster', manifestAddress: ma, manifest: m, source: 'peer' })
    expect(out.value.providers.map((p) => p.node)).toEqual([members[4]!.identity.id])
    expect(doneAt - started).toBeLessThan(1_200)
    // The slow peer's request was cancelled once idx-4 answered.
    expect(slowPeer.aborted - abortedBefore).toBe(1)
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
        nodeId: 'n00000000000000a1',
        advertise: 'storage',
        auth: { keys: issuer.keys },
        announce: { target: 'index', ttlSec: 600 },
        // Its service tokens are its own: sub node:<its id> (the index takes announcements only so).
        tokens: { token: ({ aud, scope }) => issuer.mint({ sub: 'node:n00000000000000a1', aud, scope }) },
      },
      transport,
    )
    closers.push(() => storage.close())
    transport.mount('storage', storage)

    const events = index.subscribe()
    const put = await createStorageClient(transport, { token: issuer.mint({ scope: 'storage:write', aud: 'storage' }) }).put('hello from n00000000000000a1')
    for await (const e of events) {
      if (e.type === 'provider:added' && e.address === put.address) break
    }
    events.close()
    const r = await createIndexClient(transport).resolve(put.address)
    expect(r).toMatchObject({ key: put.address, source: 'local' })
    // The score is the record's freshness: just under 1 after however long this took in real time.
    expect(r.providers).toMatchObject([{ node: 'n00000000000000a1', endpoint: 'storage' }])
    expect(r.providers[0]!.score).toBeGreaterThan(0.9)

    // And a name bound to a manifest of that content resolves to n00000000000000a1.
    const writer = createIndexClient(transport, { token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
    const manifest = await createStorageClient(transport, { token: issuer.mint({ scope: 'storage:write', aud: 'storage' }) }).put(
      JSON.stringify({ content: put.address, size: put.size, type: 'text/plain' }),
    )
    await writer.setName('hello.n00000000000000a1', manifest.address)
    const byName = await createIndexClient(transport).resolve('hello.n00000000000000a1')
    expect(byName).toMatchObject({ manifestAddress: manifest.address, manifest: { content: put.address } })
    expect(byName.providers.map((p) => p.node)).toEqual(['n00000000000000a1'])
  })
})
