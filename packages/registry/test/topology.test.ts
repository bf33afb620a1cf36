import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { concurrencyDocProblems } from '@ron/core/testing'
import { registryTopology } from '../src/topology.js'
import { resolveConfig } from '../src/config.js'
import { harness } from './helpers.js'

describe('registry topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe() with default options', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const h = await harness()
    try {
      expect(concurrencyDocProblems(doc, h.svc.describe())).toEqual([])
      expect(h.svc.describe()).toEqual(registryTopology(resolveConfig({})))
    } finally {
      await h.close()
    }
  })

  it('follows the config: capacities per the seed and SPEC 3.2', () => {
    const t = registryTopology(resolveConfig({ queues: { proposals: 3, retention: 2 }, sse: { bufferPerClient: 5 } }))
    const ch = Object.fromEntries(t.channels.map((c) => [c.name, c]))
    expect(ch['proposals']).toMatchObject({ kind: 'mpsc', capacity: 3, overflow: 'reject-new' })
    expect(ch['approvals']).toMatchObject({ kind: 'mpsc', capacity: 512, overflow: 'reject-new' })
    expect(ch['committed']).toMatchObject({ kind: 'broadcast', capacity: 1024, overflow: 'drop-oldest' })
    expect(ch['retention_cmd']).toMatchObject({ kind: 'mpsc', capacity: 2, overflow: 'shed' })
    expect(ch['cfg_reload']).toMatchObject({ capacity: 16 })
    expect(ch['stream']).toMatchObject({ capacity: 5 })
  })
})

describe('registry config', () => {
  it('fills documented defaults and accepts unit strings', () => {
    expect(resolveConfig({})).toMatchObject({
      id: 'registry',
      treeHash: 'sha256',
      witnesses: [],
      witnessTimeoutMs: 5000,
      witness: { logs: [] },
      proposalTtlMs: 600_000,
      commitTimeoutMs: 5000,
      checkpointIntervalMs: 600_000,
      queues: { proposals: 512, approvals: 512, committed: 1024, retention: 8 },
      retention: { maxAgeMs: 30 * 24 * 3600 * 1000, maxEntries: 10_000, maxBytes: 1024 ** 3 },
      sse: { bufferPerClient: 64, maxClients: 8192, heartbeatMs: 5000 },
      drainDeadlineMs: 3000,
    })
    expect(resolveConfig({ checkpointIntervalMs: '30s', segmentBytes: '1MiB' })).toMatchObject({ checkpointIntervalMs: 30_000, segmentBytes: 1024 * 1024 })
  })

  it('rejects unknown keys and bad values, naming the field', () => {
    expect(() => resolveConfig({ checkpointIntervalMz: 1 } as never)).toThrow(expect.objectContaining({ code: 'Malformed' }) as Error)
    expect(() => resolveConfig({ queues: { proposals: 0 } })).toThrow(expect.objectContaining({ details: expect.objectContaining({ path: 'queues.proposals' }) as object }) as Error)
    expect(() => resolveConfig({ signers: { threshold: 3, signers: [{ id: 'a', publicKey: 'A'.repeat(43) }] } })).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ path: 'signers.threshold' }) as object }) as Error,
    )
  })
})

describe('error catalog in the README', () => {
  it('names only real @ron/core error classes, each with its SPEC status', async () => {
    const core = await import('@ron/core')
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Errors'))
    const names = [...section.matchAll(/`([A-Z][A-Za-z]+Error)`/g)].map((m) => m[1]!)
    expect(names.length).toBeGreaterThan(10)
    for (const name of names) {
      const Cls = (core as unknown as Record<string, new () => InstanceType<typeof core.RonError>>)[name]
      expect(Cls, name).toBeTypeOf('function')
      const e = new Cls!()
      expect(e.status).toBe(core.ErrorCodes[e.code])
      expect(`${e.code}Error`).toBe(name)
    }
  })
})
