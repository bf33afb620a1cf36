import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { MemoryTransport, concurrencyDocProblems } from '@ron/core'
import { createStorageService, placement, resolveOptions, storageTopology } from '../src/index.js'
import { addressOfBytes, bytes } from './helpers.js'

describe('storage topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe() with default options', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const svc = await createStorageService()
    try {
      expect(concurrencyDocProblems(doc, svc.describe())).toEqual([])
      expect(svc.describe()).toEqual(storageTopology(resolveOptions({})))
    } finally {
      await svc.close()
    }
  })

  it('follows the options: capacities, pool sizes and policies per the seed', () => {
    const t = storageTopology(resolveOptions({ workQueue: 3, getConcurrency: 2, putConcurrency: 1, repair: { queue: 5, workers: 4 } }))
    const ch = Object.fromEntries(t.channels.map((c) => [c.name, c]))
    expect(ch.work).toMatchObject({ kind: 'mpsc', capacity: 3, overflow: 'reject-new', pool: { concurrency: 3 } })
    expect(ch.repair).toMatchObject({ kind: 'mpsc', capacity: 5, overflow: 'shed' })
    expect(ch.events).toMatchObject({ kind: 'broadcast', capacity: 1024, overflow: 'drop-oldest' })
    expect(t.tasks.find((x) => x.name === 'repair-worker')?.count).toBe(4)
  })
})

describe('storage options', () => {
  it('fills documented defaults', () => {
    const o = resolveOptions({})
    expect(o).toMatchObject({
      id: 'storage',
      chunkSize: 65536,
      maxObjectBytes: 16 * 1024 ** 3,
      publicReads: true,
      rf: 1,
      writeQuorum: 1,
      workQueue: 512,
      drainDeadlineMs: 3000,
      repair: { intervalMs: 30000, bytesPerSec: 50 * 1024 * 1024, workers: 2, queue: 256 },
      announce: { target: undefined, ttlSec: 3600, intervalMs: 1_800_000 },
    })
    expect(resolveOptions({ peers: ['b'] }).rf).toBe(2)
  })

  it('rejects unknown keys and bad values, naming the field', () => {
    expect(() => resolveOptions({ chunkSzie: 1 } as never)).toThrow(expect.objectContaining({ code: 'Malformed', details: { field: 'chunkSzie' } }) as Error)
    expect(() => resolveOptions({ repair: { workers: 0 } })).toThrow(expect.objectContaining({ details: { field: 'repair.workers' } }) as Error)
    expect(() => resolveOptions({ rf: 3, peers: ['b'] })).toThrow(expect.objectContaining({ details: { field: 'rf' } }) as Error)
    expect(() => resolveOptions({ rf: 2, writeQuorum: 3, peers: ['b'] })).toThrow(expect.objectContaining({ details: { field: 'writeQuorum' } }) as Error)
  })

  it('needs a transport for peers', async () => {
    await expect(createStorageService({ peers: ['b'] })).rejects.toMatchObject({ code: 'Malformed' })
    const svc = await createStorageService({ peers: ['b'] }, new MemoryTransport())
    await svc.close()
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
