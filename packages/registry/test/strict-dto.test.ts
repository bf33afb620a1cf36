import { afterEach, describe, expect, it } from 'vitest'
import { memoryRequest } from '@ron/core/testing'
import { ALL_SCOPES, harness, payload, type Harness } from './helpers.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

describe('strict DTOs (SPEC.md section 4)', () => {
  it('an unknown field, top-level or nested in a descriptor, is 400 Malformed naming the field', async () => {
    h = await harness()
    const x = h
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    const p = await x.client.propose(payload(1))
    const item = payload(1).items[0]!
    const cases: Array<[string, unknown, string]> = [
      ['/registry/proposals', { payload: payload(2), extra: 1 }, 'extra'],
      ['/registry/proposals', { payload: { ...payload(2), extra: 1 } }, 'payload.extra'],
      ['/registry/proposals', { payload: { schemaVersion: 1, items: [{ ...item, colour: 'red' }] } }, 'payload.items.0.colour'],
      ['/registry/proposals', { payload: { ...payload(2), meta: { notes: 'x' } } }, 'payload.meta.notes'],
      [`/registry/approvals/${p.proposalId}`, { signerId: 's1', sig: 'A'.repeat(86), extra: true }, 'extra'],
      ['/registry/supersede', { version: 1, reason: 'r', why: 'x' }, 'why'],
    ]
    for (const [path, body, field] of cases) {
      const res = await memoryRequest(x.svc, { method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const json = await res.json<{ error: { code: string; details: { field?: string } } }>()
      if (json.error === undefined) throw new Error(`${path} ${JSON.stringify(body)} → ${res.status} ${JSON.stringify(json)}`)
      expect([path, res.status, json.error.code, json.error.details.field], JSON.stringify(json)).toEqual([path, 400, 'Malformed', field])
    }
  })
})
