/**
 * The node's service table as data (docs/service-contract.md §8): the node's base keys under
 * each service's own part, and every service in the table.
 */

import { describe, expect, it } from 'vitest'
import { KNOWN_SERVICES } from '../src/ports.js'
import { CREATE_ORDER, FACTORIES, baseFor, withBase } from '../src/services.js'

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
