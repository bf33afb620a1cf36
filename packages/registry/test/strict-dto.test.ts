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

  it('an approval body outside the schema is 400 Malformed naming the field, whichever rule it breaks', async () => {
    h = await harness()
    const x = h
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    const p = await x.client.propose(payload(1))
    const sig = 'A'.repeat(86)
    const cases: Array<[unknown, string]> = [
      [{ signerId: 's1' }, 'sig'],
      [{ sig }, 'signerId'],
      [{ signerId: '', sig }, 'signerId'],
      [{ signerId: 'x'.repeat(129), sig }, 'signerId'],
      [{ signerId: 7, sig }, 'signerId'],
      [{ signerId: 's1', sig: 'A'.repeat(85) }, 'sig'],
      [{ signerId: 's1', sig: `${'A'.repeat(85)}+` }, 'sig'],
      [{ signerId: 's1', sig, __proto__x: 1 }, '__proto__x'],
      [[{ signerId: 's1', sig }], '(root)'],
      ['s1', '(root)'],
    ]
    for (const [body, field] of cases) {
      const res = await memoryRequest(x.svc, { method: 'POST', path: `/registry/approvals/${p.proposalId}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const json = await res.json<{ error: { code: string; details: { field?: string } } }>()
      expect([res.status, json.error.code, json.error.details.field ?? ''], JSON.stringify(body)).toEqual([400, 'Malformed', field])
    }
    // A JSON "__proto__" member is an own member like any other: refused, and no prototype is set.
    const res = await memoryRequest(x.svc, {
      method: 'POST',
      path: `/registry/approvals/${p.proposalId}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: `{"signerId":"s1","sig":"${sig}","__proto__":{"admin":true}}`,
    })
    expect(res.status).toBe(400)
    await res.dump()
    // A commit carrying its approvals: the same rules for each, and for the list.
    const a = { signerId: 's1', sig }
    const commits: Array<[unknown, string]> = [
      [{ approvals: [] }, 'approvals'],
      [{ approvals: Array.from({ length: 65 }, () => a) }, 'approvals'],
      [{ approvals: [a, { signerId: 's2' }] }, 'approvals.1.sig'],
      [{ approvals: [{ ...a, extra: 1 }] }, 'approvals.0.extra'],
      [{ approvals: [a], extra: 1 }, 'extra'],
      [{ approvals: a }, 'approvals'],
    ]
    for (const [body, field] of commits) {
      const r = await memoryRequest(x.svc, { method: 'POST', path: `/registry/commit/${p.proposalId}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const json = await r.json<{ error: { code: string; details: { field?: string } } }>()
      expect([r.status, json.error.code, json.error.details.field ?? ''], JSON.stringify(body).slice(0, 80)).toEqual([400, 'Malformed', field])
    }
    // The largest id the schema allows still reaches the committer (an unknown signer: 422).
    const ok = await memoryRequest(x.svc, { method: 'POST', path: `/registry/approvals/${p.proposalId}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ signerId: 'x'.repeat(128), sig }) })
    expect(ok.status).toBe(422)
    await ok.dump()
  })
})
