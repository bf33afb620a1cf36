import { afterEach, describe, expect, it } from 'vitest'
import { createServiceHost, isRonError, noopLogger } from '@ron/core'
import type { Address, MetricsSink, RonRequest, RonResponse, RouteContext, Supervisor } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { corruptStoredBytes, corruptStoredTable } from '@ron/storage/testing'
import { createMemoryStore, placement } from '../src/index.js'
import { probeOf } from '../src/repair-planner.js'
import { RepairState } from '../src/repair-state.js'
import { Replicator, isLocalCorruption, pushObject } from '../src/replication.js'
import type { StorageContext } from '../src/routes/context.js'
import { statusRoutes } from '../src/routes/status.js'
import { addressOfBytes, bytes, cluster, deferred, metricValue, once, type Cluster } from './helpers.js'

const NODES = ['storage-a', 'storage-b', 'storage-c']

/** A payload whose placement (rf 2 over NODES) is exactly `want`, in order; `skip` picks a later one. */
function payloadPlacedOn(want: [string, string], skip = 0, size = 3000): Uint8Array {
  let left = skip
  for (let seed = 1; seed < 20_000; seed++) {
    const b = bytes(size, seed)
    const p = placement(addressOfBytes(b), NODES, 2)
    if (p[0] === want[0] && p[1] === want[1] && left-- === 0) return b
  }
  throw new Error('no payload found')
}

function reply(status: number): RonResponse {
  return { status, headers: {}, body: (async function* () {})() }
}

/** Re-mounts node `name` behind `fn`: a response from `fn` answers, `undefined` passes to the real service. */
function intercept(c: Cluster, name: string, fn: (req: RonRequest) => RonResponse | undefined | Promise<RonResponse | undefined>): void {
  const svc = c.node(name).svc
  c.transport.mount(name, {
    async dispatch(req) {
      return (await fn(req)) ?? svc.dispatch(req)
    },
  })
}

/** Corruption helpers bound to node `name`'s store. */
function mem(c: Cluster, name: string): { corrupt(a: Address, off: number): Promise<boolean>; corruptTable(a: Address, off: number): Promise<boolean> } {
  const store = c.node(name).svc.store
  return { corrupt: (a, off) => corruptStoredBytes(store, a, off), corruptTable: (a, off) => corruptStoredTable(store, a, off) }
}

/** Corrupts node `name`'s copy and reads it once, so the read path marks it suspect. */
async function corruptAndRead(c: Cluster, name: string, address: Address): Promise<void> {
  expect(await mem(c, name).corrupt(address, 100)).toBe(true)
  await expect(c.node(name).anon.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
}

describe('repair planner: a peer answer is about one object, only transport failures mean "down"', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('classifies HEAD answers: 200 has, 404 none, 422 bad, anything else unknown', () => {
    expect([200, 404, 422, 429, 503, 500, 401].map(probeOf)).toEqual(['has', 'none', 'bad', 'unknown', 'unknown', 'unknown', 'unknown'])
  })

  it('a placement peer answering 429 keeps its place: not unreachable, and no copy is pushed outside placement', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const { address } = await c.node('storage-a').svc.store.put(once(data))
    intercept(c, 'storage-b', (req) => (req.method === 'HEAD' ? reply(429) : undefined))
    const plan = await c.node('storage-a').svc.runRepair({ dryRun: true })
    expect(plan.unreachable).toEqual([])
    expect(plan.items.filter((i) => i.address === address)).toEqual([])
  })

  it('a placement peer answering 422 (its copy is bad) gets a push, it is not skipped as down', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const { address } = await c.node('storage-a').svc.store.put(once(data))
    intercept(c, 'storage-b', (req) => (req.method === 'HEAD' ? reply(422) : undefined))
    const plan = await c.node('storage-a').svc.runRepair({ dryRun: true })
    expect(plan.unreachable).toEqual([])
    expect(plan.items).toEqual([
      expect.objectContaining({ address, action: 'push', to: 'storage-b', priority: 'urgent', reason: expect.stringContaining('fails verification') as string }),
    ])
  })

  it('a busy answer for one corrupt object does not make the next corrupt object unrepairable', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const x = payloadPlacedOn(['storage-a', 'storage-b'], 0)
    const y = payloadPlacedOn(['storage-a', 'storage-b'], 1)
    const ax = (await c.node('storage-a').svc.store.put(once(x))).address
    const ay = (await c.node('storage-a').svc.store.put(once(y))).address
    await c.node('storage-b').svc.store.put(once(x))
    await c.node('storage-b').svc.store.put(once(y))
    await corruptAndRead(c, 'storage-a', ax)
    await corruptAndRead(c, 'storage-a', ay)
    intercept(c, 'storage-b', (req) => (req.method === 'HEAD' && req.url === `/o/${ax}` ? reply(429) : undefined))
    const plan = await c.node('storage-a').svc.runRepair({ dryRun: true })
    expect(plan.unreachable).toEqual([])
    expect(plan.items).toContainEqual(expect.objectContaining({ address: ay, action: 'replace-corrupt', from: ['storage-b'] }))
    expect(plan.unrepairable).toEqual([{ address: ax, reason: expect.stringContaining('storage-b busy or failing') as string }])
  })
})

describe('repair of a deleted object', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('planner step 1 treats a suspect that is gone as clear: nothing is fetched back and status answers 404', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(data))
    await c.node('storage-b').svc.store.put(once(data))
    await corruptAndRead(c, 'storage-a', address)
    expect((await a.anon.status(address)).repair).toMatchObject({ state: 'suspect' })
    await a.svc.store.delete(address)
    const plan = await a.svc.runRepair()
    expect(plan.items).toEqual([])
    expect(plan.unrepairable).toEqual([])
    await a.svc.repairIdle()
    expect(await a.svc.store.stat(address)).toBeUndefined()
    await expect(a.anon.status(address)).rejects.toMatchObject({ code: 'NotFound' })
  })

  it('a queued replace-corrupt whose object is deleted before it runs does not bring it back', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(data))
    await c.node('storage-b').svc.store.put(once(data))
    await corruptAndRead(c, 'storage-a', address)
    const gate = deferred()
    intercept(c, 'storage-b', async (req) => {
      if (req.method === 'GET' && req.url === `/o/${address}`) await gate.promise
      return undefined
    })
    const plan = await a.svc.runRepair()
    expect(plan.items).toEqual([expect.objectContaining({ address, action: 'replace-corrupt' })])
    await a.svc.store.delete(address)
    gate.resolve()
    await a.svc.repairIdle()
    expect(await a.svc.store.stat(address)).toBeUndefined()
    expect(await metricValue(a.svc, 'repairs_total', { outcome: 'obsolete' })).toBe(1)
    await expect(a.anon.status(address)).rejects.toMatchObject({ code: 'NotFound' })
  })
})

describe('repair of a deleted object, failing', () => {
  it('a replace-corrupt that fails after its object was deleted leaves no "failed" state behind', async () => {
    const c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    try {
      const data = payloadPlacedOn(['storage-a', 'storage-b'])
      const a = c.node('storage-a')
      const { address } = await a.svc.store.put(once(data))
      await c.node('storage-b').svc.store.put(once(data))
      await corruptAndRead(c, 'storage-a', address)
      const gate = deferred()
      intercept(c, 'storage-b', async (req) => {
        if (req.method !== 'GET' || req.url !== `/o/${address}`) return undefined
        await gate.promise
        return reply(503)
      })
      expect((await a.svc.runRepair()).enqueued).toBe(1)
      await a.svc.store.delete(address)
      gate.resolve()
      await a.svc.repairIdle()
      await expect(a.anon.status(address)).rejects.toMatchObject({ code: 'NotFound' })
    } finally {
      await c.close()
    }
  })
})

describe('a push that finds the local copy corrupt', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('pushObject marks the address suspect and reports local corruption, not a peer failure', async () => {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 1, chunkSize: 1024 }))
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(bytes(5000, 9)))
    await mem(c, 'storage-a').corrupt(address, 3000)
    const marked: Address[] = []
    const ctx = { store: a.svc.store, transport: c.transport, token: async () => c!.tokens.replicate, timeoutMs: 5000, markSuspect: (x: Address) => marked.push(x) }
    const err = await pushObject(ctx, 'storage-b', address, AbortSignal.timeout(5000)).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isLocalCorruption(err)).toBe(true)
    expect(isRonError(err, 'IntegrityFailed')).toBe(true)
    expect(marked).toEqual([address])
    expect(await c.node('storage-b').svc.store.stat(address)).toBeUndefined()

    // A corrupt chunk table fails at open: same outcome.
    const other = (await a.svc.store.put(once(bytes(3000, 10)))).address
    await mem(c, 'storage-a').corruptTable(other, 20)
    const err2 = await pushObject(ctx, 'storage-b', other, AbortSignal.timeout(5000)).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isLocalCorruption(err2)).toBe(true)
    expect(marked).toEqual([address, other])
  })

  it("a peer's own 422 is a peer failure, not local corruption", async () => {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 1, chunkSize: 1024 }))
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(bytes(5000, 11)))
    intercept(c, 'storage-b', async (req) => {
      if (req.method !== 'PUT') return undefined
      for await (const _ of req.body) void _
      const body = JSON.stringify({ error: { code: 'IntegrityFailed', message: 'bad', retryable: false, details: { local: true } } })
      return { status: 422, headers: { 'content-type': 'application/json' }, body: (async function* () { yield new TextEncoder().encode(body) })() }
    })
    const marked: Address[] = []
    const ctx = { store: a.svc.store, transport: c.transport, token: async () => c!.tokens.replicate, timeoutMs: 5000, markSuspect: (x: Address) => marked.push(x) }
    const err = await pushObject(ctx, 'storage-b', address, AbortSignal.timeout(5000)).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeDefined()
    expect(isLocalCorruption(err)).toBe(false)
    expect(marked).toEqual([])
  })

  it('the replicator marks it suspect, counts no peer failure and stops pushing the bad copy', async () => {
    const store = createMemoryStore({ chunkSize: 1024 })
    const { address } = await store.put(once(bytes(4000, 12)))
    await corruptStoredBytes(store, address, 10)
    const pushes: string[] = []
    const transport = {
      request: async (target: string, req: { body?: unknown }) => {
        pushes.push(target)
        for await (const _ of req.body as AsyncIterable<Uint8Array>) void _
        return { status: 201, headers: {}, body: (async function* () {})(), dump: async () => undefined, json: async () => ({}) }
      },
      close: async () => undefined,
    }
    const failures: unknown[] = []
    const metrics: MetricsSink = { inc: (name: string, labels?: unknown) => failures.push({ name, labels }), observe: () => undefined, set: () => undefined }
    const marked: Address[] = []
    const r = new Replicator({
      store,
      transport: transport as never,
      token: async () => undefined,
      timeoutMs: 1000,
      nodeId: 'storage-a',
      peers: ['storage-b', 'storage-c'],
      rf: 3,
      writeQuorum: 3,
      queueCapacity: 4,
      supervisor: {} as Supervisor,
      metrics,
      logger: noopLogger,
      markSuspect: (x) => marked.push(x),
    })
    try {
      await expect(r.replicate(address, AbortSignal.timeout(5000))).rejects.toMatchObject({ code: 'Unavailable', status: 503, details: { reason: 'write_quorum' } })
      expect(marked).toEqual([address])
      expect(pushes).toHaveLength(1)
      expect(failures).toEqual([])
      expect(r.depth).toBe(0)
    } finally {
      r.close()
      await store.close()
    }
  })

  it('a repair push of a corrupt local copy leaves it suspect; the next plan does not push it again', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-c'])
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(data))
    await mem(c, 'storage-a').corrupt(address, 2500)
    const plan = await a.svc.runRepair()
    expect(plan.items).toEqual([expect.objectContaining({ address, action: 'push', to: 'storage-c' })])
    await a.svc.repairIdle()
    const st = await a.anon.status(address)
    expect(st.repair).toMatchObject({ state: 'suspect' })
    expect(st.local).toMatchObject({ ok: false, reason: 'suspect' })
    expect(await c.node('storage-c').svc.store.stat(address)).toBeUndefined()
    const next = await a.svc.runRepair({ dryRun: true })
    expect(next.items).toEqual([])
    expect(next.unrepairable).toEqual([expect.objectContaining({ address })])
  })
})

describe('GET /o/:addr/status', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('by default is cheap: no scrub of the object and no HEAD to any peer', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const a = c.node('storage-a')
    const { address } = await a.client.put(bytes(5000, 21))
    let verifies = 0
    const store = a.svc.store
    const verify = store.verify.bind(store)
    ;(store as { verify: typeof store.verify }).verify = (addr, signal) => {
      verifies++
      return verify(addr, signal)
    }
    let heads = 0
    for (const peer of ['storage-b', 'storage-c']) {
      intercept(c, peer, (req) => {
        if (req.method === 'HEAD') heads++
        return undefined
      })
    }
    const st = await a.anon.status(address)
    expect(st).toMatchObject({ address, size: 5000, local: { present: true, ok: true, badChunks: [], scrubbed: false } })
    expect(st.replicas).toEqual([{ node: 'storage-a', present: true }])
    expect(verifies).toBe(0)
    expect(heads).toBe(0)
  })

  it('?scrub=1 needs storage:admin even when reads are public', async () => {
    c = await cluster(['storage'])
    const { address } = await c.node().client.put('scrub me')
    const anon = await c.request('storage', 'GET', `/o/${address}/status?scrub=1`)
    expect(anon.status).toBe(401)
    await anon.dump()
  })

  it('?scrub=1 works on a public-read node with a storage:admin token (the host verifier is wired to the route)', async () => {
    c = await cluster(['storage'])
    const { address } = await c.node().client.put('scrub me')
    const res = await c.request('storage', 'GET', `/o/${address}/status?scrub=1`, { authorization: `Bearer ${c.tokens.admin}` })
    expect(res.status).toBe(200)
    expect((await res.json<{ local: { scrubbed: boolean; ok: boolean } }>()).local).toMatchObject({ scrubbed: true, ok: true })
  })

  it('?scrub=1 with storage:admin scrubs every chunk and probes peers; storage:read alone is refused', async () => {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024, publicReads: false }))
    const { address } = await c.node('storage-a').client.put(bytes(5000, 22))
    await mem(c, 'storage-a').corrupt(address, 2 * 1024 + 5)
    const read = await c.request('storage-a', 'GET', `/o/${address}/status?scrub=1`, { authorization: `Bearer ${c.tokens.read}` })
    expect(read.status).toBe(403)
    await read.dump()
    const res = await c.request('storage-a', 'GET', `/o/${address}/status?scrub=1`, { authorization: `Bearer ${c.tokens.admin}` })
    expect(res.status).toBe(200)
    const st = await res.json<{ local: unknown; replicas: unknown; repair: unknown }>()
    expect(st.local).toEqual({ present: true, ok: false, badChunks: [2], scrubbed: true })
    expect(st.replicas).toEqual([
      { node: 'storage-a', present: false },
      { node: 'storage-b', present: true },
    ])
    expect(st.repair).toMatchObject({ state: 'suspect' })
  })

  it('takes a reader slot of the work queue, and checks a scrub token with the host when public', async () => {
    const issuer = createTestIssuer()
    const host = createServiceHost({ id: 'storage', version: '0', topology: { service: 'storage', tasks: [], channels: [] }, auth: { keys: issuer.keys } })
    const store = createMemoryStore({ chunkSize: 1024 })
    const { address } = await store.put(once(bytes(3000, 23)))
    const s = {
      o: { id: 'storage', nodeId: 'storage', rf: 1, publicReads: true,  repair: { probeTimeoutMs: 100 } },
      store,
      pins: { has: () => false },
      repair: new RepairState(),
      transport: undefined,
      clock: { now: () => 0 },
      placement: () => ['storage'],
      kick: () => undefined,
      authenticate: (req: RonRequest, scope?: string) => host.authenticate(req, scope),
      work: {
        acquire: (kind: string) => {
          slots.push(kind)
          return Promise.resolve(() => undefined)
        },
      },
      signalFor: (ctx: RouteContext) => ctx.signal,
    } as unknown as StorageContext
    const slots: string[] = []
    const [route] = statusRoutes(s)
    expect(route).toMatchObject({ method: 'GET', path: '/o/:addr/status' })
    expect(route!.scope).toBeUndefined()
    const call = (token?: string): Promise<unknown> => {
      const url = `/o/${address}/status?scrub=1`
      const ctx = {
        req: { method: 'GET', url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
        params: { addr: address },
        query: new URLSearchParams('scrub=1'),
        auth: undefined,
        signal: AbortSignal.timeout(5000),
      } as unknown as RouteContext
      return Promise.resolve(route!.handler(ctx))
    }
    try {
      await expect(call()).rejects.toMatchObject({ code: 'Unauthorized' })
      await expect(call(issuer.mint({ scope: 'storage:read', aud: 'storage' }))).rejects.toMatchObject({ code: 'Forbidden' })
      const ok = (await call(issuer.mint({ scope: 'storage:admin', aud: 'storage' }))) as { status: number; json: { local: unknown } }
      expect(ok.status).toBe(200)
      expect(ok.json.local).toEqual({ present: true, ok: true, badChunks: [], scrubbed: true })
      // Admitted through the work queue as a read, after the token check.
      expect(slots).toEqual(['read'])
    } finally {
      await store.close()
      await host.service.close()
    }
  })
})
