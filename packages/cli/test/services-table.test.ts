/**
 * The node's service table as data (docs/service-contract.md §8): the node's base keys under
 * each service's own part, and every service in the table.
 */

import type { RonService } from '@ron/core'
import { deferred } from '@ron/core/testing'
import { describe, expect, it } from 'vitest'
import { KNOWN_SERVICES } from '../src/ports.js'
import { CREATE_ORDER, FACTORIES, baseFor, hostedBy, withBase, type ServiceContext, type ServiceEntry } from '../src/services.js'

const ctx = { writeOrigins: ['http://127.0.0.1:7700'] }

describe('baseFor and withBase', () => {
  it("gives every service the node's limits, CORS and drain keys, with the admin origin always writing", () => {
    const base = baseFor(ctx, { http: { jsonBodyLimit: 1024, maxRpsPerIp: 5 }, cors: { writeOrigins: ['https://app.example'] }, drainDeadlineMs: 900, drainReadWindowMs: 7 })
    expect(withBase(base, {})).toEqual({
      http: { jsonBodyLimit: 1024, maxRpsPerIp: 5 },
      cors: { readOrigins: '*', writeOrigins: ['http://127.0.0.1:7700', 'https://app.example'] },
      drainDeadlineMs: 900,
      drainReadWindowMs: 7,
    })
  })

  it("lets a service's own section win key by key: http keys, read origins, drain keys; write origins add up", () => {
    const base = baseFor(ctx, { http: { jsonBodyLimit: 1024, maxRpsPerIp: 5 }, cors: { readOrigins: ['https://a.example'] }, drainDeadlineMs: 900 })
    const merged = withBase(base, { http: { maxRpsPerIp: 500, maxInflight: undefined }, cors: { readOrigins: '*', writeOrigins: ['https://own.example'] }, drainDeadlineMs: 50, other: 1 })
    expect(merged).toEqual({
      http: { jsonBodyLimit: 1024, maxRpsPerIp: 500 },
      cors: { readOrigins: '*', writeOrigins: ['http://127.0.0.1:7700', 'https://own.example'] },
      drainDeadlineMs: 50,
      other: 1,
    })
  })

  it('has one entry per service, created in CREATE_ORDER', () => {
    expect(Object.keys(FACTORIES).sort()).toEqual([...KNOWN_SERVICES].sort())
    expect([...CREATE_ORDER].sort()).toEqual([...KNOWN_SERVICES].sort())
  })
})

describe('hostedBy: preload', () => {
  const service = { id: 'fake' } as unknown as RonService
  const svcCtx = { writeOrigins: [], config: {}, transport: {}, logger: {}, clock: {}, identity: {}, nodes: {} } as unknown as ServiceContext
  /** An entry whose load() waits for `gate` and counts its calls. */
  function entry(gate: Promise<void>): { entry: ServiceEntry<object, object>; loads: () => number } {
    let loads = 0
    return {
      loads: () => loads,
      entry: {
        load: async () => {
          loads++
          await gate
          return () => Promise.resolve(service)
        },
        config: () => Promise.resolve({}),
        runtime: () => Promise.resolve({}),
        reload: () => ({}),
      },
    }
  }

  it('starts the load at once, and create() uses that load instead of starting another', async () => {
    const gate = deferred<void>()
    const e = entry(gate.promise)
    const factory = hostedBy(e.entry)
    factory.preload?.()
    expect(e.loads()).toBe(1)
    const created = factory.create(svcCtx)
    gate.resolve()
    expect(await created).toBe(service)
    expect(e.loads()).toBe(1)
  })

  it('leaves a failed load to create(), which reports it, and a later create() loads again', async () => {
    const gate = deferred<void>()
    const e = entry(gate.promise)
    const factory = hostedBy(e.entry)
    factory.preload?.()
    gate.reject(new Error('not built'))
    // No unhandled rejection from the preload (vitest fails the run on one); create() throws it.
    await expect(factory.create(svcCtx)).rejects.toThrow('not built')
    expect(e.loads()).toBe(1)
    await expect(factory.create(svcCtx)).rejects.toThrow('not built')
    expect(e.loads()).toBe(2)
  })
})
