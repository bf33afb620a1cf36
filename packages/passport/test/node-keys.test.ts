import { describe, expect, it } from 'vitest'
import { generateIssuerKey } from '@ron/core'
import { setup } from './helpers.js'

describe('GET /v1/passport/node-keys (SPEC §5 "Peers")', () => {
  it('lists enrolled {nodeId, nodeKey} without a token, and nothing else of the enrolment', async () => {
    const s = await setup()
    try {
      const empty = await s.transport.request('passport', { method: 'GET', path: '/v1/passport/node-keys' })
      expect(empty.status).toBe(200)
      expect(await empty.json()).toEqual({ nodes: [] })

      const key = generateIssuerKey({ epoch: 1 })
      await s.client.enrolNode({ nodeId: 'n00000000000000b1', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x }, scopes: ['storage:replicate'] })
      const res = await s.transport.request('passport', { method: 'GET', path: '/v1/passport/node-keys' })
      expect(res.status).toBe(200)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(await res.json()).toEqual({ nodes: [{ nodeId: 'n00000000000000b1', nodeKey: key.publicJwk.x }] })

      // Re-enrolling a new key (an operator action: passport:admin) is what the listing shows next.
      const next = generateIssuerKey({ epoch: 1 })
      await s.client.enrolNode({ nodeId: 'n00000000000000b1', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: next.publicJwk.x }, scopes: ['storage:replicate'] })
      expect(await (await s.transport.request('passport', { method: 'GET', path: '/v1/passport/node-keys' })).json()).toEqual({ nodes: [{ nodeId: 'n00000000000000b1', nodeKey: next.publicJwk.x }] })

      // The full enrolments (scopes, audiences) stay behind passport:admin.
      expect((await s.transport.request('passport', { method: 'GET', path: '/v1/passport/nodes' })).status).toBe(401)
      // The listing is read-only.
      expect((await s.transport.request('passport', { method: 'POST', path: '/v1/passport/node-keys', body: '{}' })).status).toBe(405)
    } finally {
      await s.close()
    }
  })
})
