import { readFile } from 'node:fs/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError, MemoryTransport, isRonError } from '@ron/core'
import { VirtualClock, concurrencyDocProblems } from '@ron/core/testing'
import { INDEX_METRIC_NAMES, createIndexService, indexTopology, resolveIndexConfig } from '../src/index.js'
import { FakePeer, addr, addressAnswer, directory, manifestFor, nameAnswer, settle, setup, testNode, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

describe('topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe() of a running service', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const svc = await createIndexService({ resolverWorkers: 2 })
    try {
      expect(concurrencyDocProblems(doc, svc.describe())).toEqual([])
      expect(svc.describe()).toEqual(indexTopology(resolveIndexConfig({ resolverWorkers: 2 })))
    } finally {
      await svc.close()
    }
  })

  it('follows the config: pool size, queue capacity, warm-up task', () => {
    const t = indexTopology(resolveIndexConfig({ resolverWorkers: 6, workQueue: 9, warmupKeys: ['a.b'] }))
    expect(t.channels.find((c) => c.name === 'work')).toMatchObject({ kind: 'mpsc', capacity: 9, overflow: 'reject-new', pool: { concurrency: 6 } })
    expect(t.tasks.find((x) => x.name === 'resolver')?.count).toBe(6)
    expect(t.tasks.find((x) => x.name === 'warmup-prefetcher')?.count).toBe(1)
  })
})

describe('config', () => {
  it('fills the seed defaults', () => {
    expect(resolveIndexConfig({})).toMatchObject({
      deadlineMs: 1200,
      workQueue: 512,
      http: { maxConcurrentPerIp: 256 },
      drainDeadlineMs: 3000,
      // No read window: the index is unready as a whole at the start of a drain.
      drainReadWindowMs: 0,
      purgeIntervalMs: 30_000,
      peers: { alpha: 3, beta: 2, hedgeMs: 150, tries: 3, retryMinMs: 50, retryMaxMs: 100 },
      breaker: { windowMs: 30_000, tripRatio: 0.5, cooldownMs: 10_000, halfOpenProbes: 3 },
      cache: { ttlMs: 10_000, maxEntries: 100_000, negativeTtlMs: 2_000 },
    })
    expect(resolveIndexConfig({ peers: { hedgeMs: '2s' } }).peers.hedgeMs).toBe(2000)
  })

  it('rejects unknown keys and bad values with a ConfigError naming the field', async () => {
    expect(() => resolveIndexConfig({ deadlinMs: 1 } as never)).toThrow(ConfigError)
    expect(() => resolveIndexConfig({ peers: { alpha: 0 } })).toThrow(/peers\.alpha/)
    expect(() => resolveIndexConfig({ peers: { retryMinMs: 200, retryMaxMs: 100 } })).toThrow(/retryMaxMs/)
    await expect(createIndexService({ cache: { ttlMs: 'soon' } })).rejects.toMatchObject({ code: 'Malformed', details: { path: 'cache.ttlMs' } })
  })
})

describe('service lifecycle', () => {
  it('registers every metric at startup', async () => {
    env = await setup({ peers: { targets: ['peer-a'] } })
    const text = await env.index.metricsText()
    for (const name of INDEX_METRIC_NAMES) expect(text, name).toContain(`# TYPE ${name} `)
    expect(text).toMatch(/breaker_state\{target="peer-a"[^}]*\} 0/)
    expect(text).toMatch(/dht_hedged_requests_total\{result="won"[^}]*\} 0/)
    // The series core's host emits on a drain and on a full queue, at zero from the start.
    expect(text).toMatch(/tasks_aborted_total\{kind="work-worker"[^}]*\} 0/)
    expect(text).toMatch(/busy_rejections_total\{endpoint="\/resolve\/:key",queue="work"[^}]*\} 0/)
    expect(text).toContain('config_reloads_total')
  })

  it('the README lists every metric the service registers', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    for (const name of INDEX_METRIC_NAMES) expect(readme, name).toContain(`\`${name}`)
  })

  it('reports readiness per path; readiness turns false at the start of a drain while /healthz stays 200', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, drainDeadlineMs: 2000 }, { clock })
    const p = new FakePeer(clock)
    p.reply = () => ({ hang: true })
    env.transport.mount('peer-1', p)
    expect(env.index.health()).toMatchObject({ live: true, ready: true, writeReady: true, paths: { resolve: true, names: true } })
    const inflight = settle(env.request('GET', `/resolve/${addr(1)}`))
    await clock.flush()
    const closing = env.index.close()
    await clock.flush()
    expect(env.index.health()).toMatchObject({ live: true, ready: false, writeReady: false })
    const ready = await env.request('GET', '/readyz')
    expect(ready.status).toBe(503)
    await ready.dump()
    const healthz = await env.request('GET', '/healthz')
    expect(healthz.status).toBe(200)
    await healthz.dump()
    const late = await env.request('GET', `/resolve/${addr(2)}`)
    expect(late.status).toBe(503)
    await late.dump()
    await clock.advance(1200)
    const out = await inflight
    expect(out.ok && out.value.status).toBe(504)
    if (out.ok) await out.value.dump()
    await closing
  })

  it('drain shorter than the budget: in-flight resolves are aborted at the drain deadline and counted', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, drainDeadlineMs: 300 }, { clock })
    const p = new FakePeer(clock)
    p.reply = () => ({ hang: true })
    env.transport.mount('peer-1', p)
    const inflight = settle(env.request('GET', `/resolve/${addr(5)}`))
    await clock.flush()
    const closing = env.index.close()
    await clock.advance(300)
    await closing
    const out = await inflight
    expect(out.ok && out.value.status).toBe(503)
    if (out.ok) await out.value.dump()
    expect(p.aborted).toBe(1)
    // A request cut off at the drain deadline counts its pool worker as aborted (SPEC §3.3).
    expect(await env.index.metricsText()).toMatch(/tasks_aborted_total\{kind="work-worker"[^}]*\} [1-9]/)
  })

  it('reload swaps the snapshot atomically: new peers are used, immutable fields and bad values are refused and roll back', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    const p = new FakePeer(clock)
    const a = addr(3)
    p.reply = () => ({ status: 200, json: addressAnswer(a, ['node-p']) })
    env.transport.mount('peer-new', p)
    await expect(env.anon.resolve(a)).rejects.toMatchObject({ code: 'NotFound' })
    await env.index.reload({ peers: { targets: ['peer-new'] }, cache: { negativeTtlMs: 1 } })
    expect(env.index.config().peers.targets).toEqual(['peer-new'])
    await clock.advance(2_500) // the breaker janitor adopts the new peer list; the old NotFound expires
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'peer' })
    const before = env.index.config()
    await expect(env.index.reload({ workQueue: 3 })).rejects.toMatchObject({ code: 'Malformed', details: { reason: 'immutable' } })
    await expect(env.index.reload({ deadlineMs: -1 })).rejects.toSatisfy((e: unknown) => isRonError(e, 'Malformed'))
    expect(env.index.config()).toBe(before)
    const text = await env.index.metricsText()
    expect(text).toMatch(/config_reloads_total\{[^}]*\} 1/)
    expect(text).toMatch(/config_reload_errors_total\{[^}]*\} 2/)
  })

  it('the warm-up prefetcher fills the cache at start', async () => {
    const clock = new VirtualClock(1_000_000)
    const env0 = await setup({}, { clock })
    const m = await env0.put(manifestFor(9))
    await env0.client.setName('warm.up', m)
    await env0.index.close()
    env = env0
    // a second index over the same transport with the name bound at a peer
    const p = new FakePeer(clock)
    const me = testNode()
    const home = testNode()
    p.reply = (k) => (k === 'warm.up' ? { status: 200, json: nameAnswer('warm.up', manifestFor(9), { home }) } : { status: 404 })
    env.transport.mount('peer-w', p)
    const svc = await createIndexService({ amnesia: true, clock, warmupKeys: ['warm.up'], peers: { targets: ['peer-w'] }, identity: me.identity, nodes: directory(me, home) }, env.transport)
    try {
      await clock.advance(10)
      expect(p.calls).toContain('warm.up')
      await expect(svc.resolve('warm.up')).resolves.toMatchObject({ source: 'cache', manifestAddress: m })
    } finally {
      await svc.close()
    }
  })
})

describe('host options', () => {
  it('the base keys cors and http.* reach the host', async () => {
    env = await setup({ cors: { readOrigins: ['https://app.example'], writeOrigins: ['https://admin.example'] }, http: { jsonBodyLimit: 256 } })
    const read = await env.request('GET', `/resolve/${addr(1)}`, { origin: 'https://app.example' })
    expect(read.headers['access-control-allow-origin']).toBe('https://app.example')
    await read.dump()
    const big = await env.request('POST', '/providers', { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.announce}` }, JSON.stringify({ address: addr(1), node: 'n', endpoint: 'x'.repeat(300), ttlSec: 1 }))
    expect(big.status).toBe(413)
    await big.dump()
  })
})

describe('janitors', () => {
  it('leave no timers or waiters behind: after close() the virtual clock has nothing pending', async () => {
    const clock = new VirtualClock(1_000_000)
    const transport = new MemoryTransport({ clock })
    const svc = await createIndexService({ amnesia: true, peers: { targets: ['p'] } }, transport, { clock })
    for (let i = 0; i < 50; i++) await clock.advance(1_000)
    await svc.reload({ peers: { targets: ['p', 'q'] } })
    await clock.advance(10)
    expect(clock.pending).toBeLessThanOrEqual(3) // one sleep each: cache janitor, breaker janitor, store janitor
    await svc.close()
    await transport.close()
    expect(clock.pending).toBe(0)
  })

  it('peers without a transport are a ConfigError at creation', async () => {
    await expect(createIndexService({ amnesia: true, peers: { targets: ['p'] } })).rejects.toMatchObject({ code: 'Malformed', details: { path: 'peers.targets' } })
  })
})

describe('reload reaches every setting it accepts', () => {
  it('a lowered maxProviderRecords refuses new records at once; drainDeadlineMs reloads, http.jsonBodyLimit is immutable', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    await env.announcer('n1').announce({ address: addr(1), node: 'n1', endpoint: 'http://n1', ttlSec: 60 })
    await env.index.reload({ maxProviderRecords: 1 })
    await expect(env.announcer('n2').announce({ address: addr(2), node: 'n2', endpoint: 'http://n2', ttlSec: 60 })).rejects.toMatchObject({ code: 'Busy', details: { reason: 'provider_table_full' } })
    // A refresh of a known record is still accepted.
    await expect(env.announcer('n1').announce({ address: addr(1), node: 'n1', endpoint: 'http://n1', ttlSec: 60 })).resolves.toMatchObject({ node: 'n1' })
    await env.index.reload({ drainDeadlineMs: 100 })
    expect(env.index.config().drainDeadlineMs).toBe(100)
    await expect(env.index.reload({ http: { jsonBodyLimit: 100 } })).rejects.toMatchObject({ code: 'Malformed', details: { reason: 'immutable', path: 'http.jsonBodyLimit' } })
  })
})
