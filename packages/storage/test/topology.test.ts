import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { MemoryTransport } from '@ron/core'
import { concurrencyDocProblems } from '@ron/core/testing'
import { createStorageService, placement } from '../src/index.js'
import { resolveConfig } from '../src/config.js'
import { storageTopology } from '../src/topology.js'
import { addressOfBytes, bytes } from './helpers.js'

describe('storage topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe() of a running service with default options', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const svc = await createStorageService()
    try {
      expect(concurrencyDocProblems(doc, svc.describe())).toEqual([])
    } finally {
      await svc.close()
    }
  })

  it('describe() lists only what the running service has: replicator with peers, announcer with an index', async () => {
    const alone = await createStorageService({ repair: { auto: false } })
    const t = new MemoryTransport()
    const clustered = await createStorageService({ advertise: 'a', peers: ['b'], announce: { target: 'index' } }, t)
    try {
      const names = (svc: typeof alone): string[] => [...svc.describe().tasks.map((x) => x.name), ...svc.describe().channels.map((x) => x.name)]
      expect(names(alone)).not.toContain('replicator')
      expect(names(alone)).not.toContain('replicate')
      expect(names(alone)).not.toContain('announcer')
      expect(names(alone)).not.toContain('repair-planner')
      expect(names(clustered)).toEqual(expect.arrayContaining(['replicator', 'replicate', 'announcer', 'announce', 'repair-planner']))
    } finally {
      await alone.close()
      await clustered.close()
      await t.close()
    }
  })

  it('follows the options: capacities, pool sizes and policies per the seed', () => {
    const t = storageTopology(resolveConfig({ workQueue: 3, getConcurrency: 2, writers: 5, repair: { queue: 5, workers: 4 } }))
    const ch = Object.fromEntries(t.channels.map((c) => [c.name, c]))
    expect(ch.work).toMatchObject({ kind: 'mpsc', capacity: 3, overflow: 'reject-new', consumers: ['reader', 'writer'] })
    expect(t.tasks.find((x) => x.name === 'writer')?.count).toBe(5)
    expect(t.tasks.find((x) => x.name === 'reader')?.count).toBe(2)
    expect(ch.repair).toMatchObject({ kind: 'mpsc', capacity: 5, overflow: 'shed' })
    expect(ch.events).toMatchObject({ kind: 'broadcast', capacity: 1024, overflow: 'drop-oldest' })
    expect(t.tasks.find((x) => x.name === 'repair-worker')?.count).toBe(4)
  })
})

describe('storage options', () => {
  it('fills documented defaults', () => {
    const o = resolveConfig({})
    expect(o).toMatchObject({
      id: 'storage',
      chunkSize: 65536,
      maxObjectBytes: 16 * 1024 ** 3,
      publicReads: true,
      rf: 1,
      writeQuorum: 1,
      workQueue: 512,
      writers: 32,
      writersPerPrincipal: 16,
      http: { minBytesPerSec: 8192, rateWindowMs: 30_000, requestTimeoutMs: 30_000, maxBodiesPerPrincipal: 16, readTimeoutMs: 5000 },
      drainDeadlineMs: 3000,
      repair: { intervalMs: 30000, bytesPerSec: 50 * 1024 * 1024, workers: 2, queue: 256 },
      announce: { ttlSec: 3600, intervalMs: 1_800_000 },
    })
    expect(resolveConfig({ peers: ['b'] }).rf).toBe(2)
  })

  it('rejects unknown keys and bad values, naming the field', () => {
    const path = (p: string): Error => expect.objectContaining({ code: 'Malformed', details: expect.objectContaining({ path: p }) }) as Error
    expect(() => resolveConfig({ chunkSzie: 1 } as never)).toThrow(path('chunkSzie'))
    expect(() => resolveConfig({ repair: { workers: 0 } })).toThrow(path('repair.workers'))
    expect(() => resolveConfig({ rf: 3, peers: ['b'] })).toThrow(path('rf'))
    expect(() => resolveConfig({ rf: 2, writeQuorum: 3, peers: ['b'] })).toThrow(path('writeQuorum'))
    expect(() => resolveConfig({ http: { minBytesPerSec: 'fast' } })).toThrow(path('http.minBytesPerSec'))
    expect(() => resolveConfig({ http: { maxBodiesPerPrincipal: 0 } })).toThrow(path('http.maxBodiesPerPrincipal'))
  })

  it('accepts sizes and durations with units (config files)', () => {
    const o = resolveConfig({ maxObjectBytes: '1GiB', http: { readTimeoutMs: '2s', minBytesPerSec: '16KiB', rateWindowMs: '10s', requestTimeoutMs: '1m' } })
    expect(o).toMatchObject({ maxObjectBytes: 1024 ** 3, http: { readTimeoutMs: 2000, minBytesPerSec: 16384, rateWindowMs: 10_000, requestTimeoutMs: 60_000 } })
    // The body share follows writersPerPrincipal upwards (a principal's held writers are never refused their bodies).
    expect(resolveConfig({ writers: 100 }).http.maxBodiesPerPrincipal).toBe(50)
    expect(resolveConfig({ writers: 4 }).http.maxBodiesPerPrincipal).toBe(16)
  })

  it('needs a transport for peers', async () => {
    await expect(createStorageService({ peers: ['b'] })).rejects.toMatchObject({ code: 'Malformed' })
    const svc = await createStorageService({ peers: ['b'] }, new MemoryTransport())
    await svc.close()
  })
})

describe('placement names nodes by their advertised endpoint', () => {
  it('a shared peer list may include the node itself; every node computes the same placement', async () => {
    expect(resolveConfig({ nodeId: 'n0000000000000001', advertise: 'http://a:7701', peers: ['http://a:7701', 'http://b:7701'] })).toMatchObject({
      peers: ['http://b:7701'],
      rf: 2,
    })
    const transport = new MemoryTransport()
    const names = ['storage-a', 'storage-b', 'storage-c']
    const svcs = await Promise.all(
      names.map((name, i) =>
        createStorageService({ nodeId: `n000000000000000${i}`, advertise: name, peers: names, repair: { auto: false }, drainReadWindowMs: 0 }, transport),
      ),
    )
    try {
      for (let i = 0; i < 20; i++) {
        const address = addressOfBytes(bytes(64, 900 + i))
        const first = svcs[0]!.placement(address)
        expect(first).toHaveLength(2)
        for (const svc of svcs) expect(svc.placement(address)).toEqual(first)
      }
    } finally {
      for (const svc of svcs) await svc.close()
      await transport.close()
    }
  })
})

describe('placement', () => {
  const nodes = ['a', 'b', 'c', 'd']
  it('is deterministic, independent of node order, and picks rf distinct nodes', () => {
    for (let i = 0; i < 50; i++) {
      const addr = addressOfBytes(bytes(16, i + 1))
      const p = placement(addr, nodes, 2)
      expect(p).toHaveLength(2)
      expect(new Set(p).size).toBe(2)
      expect(placement(addr, [...nodes].reverse(), 2)).toEqual(p)
    }
  })

  it('spreads objects over nodes and moves few of them when a node joins', () => {
    const counts = new Map<string, number>()
    let moved = 0
    for (let i = 0; i < 400; i++) {
      const addr = addressOfBytes(bytes(16, i + 1))
      const first = placement(addr, nodes, 1)[0]!
      counts.set(first, (counts.get(first) ?? 0) + 1)
      if (placement(addr, [...nodes, 'e'], 1)[0] !== first) moved++
    }
    for (const n of nodes) expect(counts.get(n)).toBeGreaterThan(60)
    expect(moved).toBeLessThan(400 / 5 + 40)
  })
})

describe('error catalog in the README', () => {
  it('names only real @ron/core error classes, each with its SPEC status', async () => {
    const core = await import('@ron/core')
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Errors'))
    const names = [...section.matchAll(/`([A-Z][A-Za-z]+Error)`/g)].map((m) => m[1]!)
    expect(names.length).toBeGreaterThan(8)
    for (const name of names) {
      const Cls = (core as unknown as Record<string, new () => InstanceType<typeof core.RonError>>)[name]
      expect(Cls, name).toBeTypeOf('function')
      const e = new Cls!()
      expect(e).toBeInstanceOf(core.RonError)
      expect(e.status).toBe(core.ErrorCodes[e.code])
      expect(`${e.code}Error`).toBe(name)
    }
  })
})

describe('node ids', () => {
  it('refuses a nodeId that is not n + 16 lowercase hex digits (a service name least of all)', () => {
    for (const bad of ['storage', 'passport', 'node-1', 'N0123456789abcdef', 'n0123456789abcde']) {
      expect(() => resolveConfig({ nodeId: bad })).toThrow(/nodeId/)
    }
  })

  it('derives a stable node id from the placement name when none is given, and never uses a service name', () => {
    const a = resolveConfig({})
    expect(a.nodeId).toMatch(/^n[0-9a-f]{16}$/)
    expect(resolveConfig({}).nodeId).toBe(a.nodeId)
    expect(resolveConfig({ advertise: 'http://b:7701' }).nodeId).not.toBe(a.nodeId)
    expect(a).toMatchObject({ advertise: 'storage', placementName: 'storage' })
  })

  it('names itself in placement by placementName when given (ron-node: its node id), and announces its advertised URL', () => {
    const o = resolveConfig({ nodeId: 'n00000000000000aa', advertise: 'http://a:7701', placementName: 'n00000000000000aa', peers: ['n00000000000000aa', 'n00000000000000bb'] })
    expect(o).toMatchObject({ placementName: 'n00000000000000aa', advertise: 'http://a:7701', peers: ['n00000000000000bb'], rf: 2 })
  })
})
