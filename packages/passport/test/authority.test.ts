import { describe, expect, it } from 'vitest'
import { createPassportClient } from '../src/index.js'
import { payloadOf, rejection, setup } from './helpers.js'

describe('authority never grows (SPEC §5)', () => {
  it('an attenuated admin token (passport:issue, maxBytes 10) cannot issue a broader token: the escalation chain is refused', async () => {
    const { client, transport, admin, close } = await setup()
    try {
      const child = await client.attenuate({ token: admin.token, scope: ['passport:issue'], ttlSec: 60, caveats: { maxBytes: 10 } })
      expect(payloadOf(child.token)).toMatchObject({ sub: 'admin', scope: 'passport:issue', ron: { maxBytes: 10 } })
      const asChild = createPassportClient(transport, { token: child.token })
      // Today's escalation: every scope, an hour, no caveats.
      const broad = await rejection(asChild.issue({ sub: 'x', aud: ['storage', 'passport'], scope: ['storage:write', 'passport:issue', 'passport:admin'], ttlSec: 3600 }))
      expect([broad.status, broad.details['reason'], broad.details['field']]).toEqual([403, 'widen', 'scope'])
      // A scope it holds but an expiry past its own.
      const late = await rejection(asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 3600 }))
      expect([late.status, late.details['reason'], late.details['field']]).toEqual([403, 'widen', 'ttlSec'])
      // Dropping the caveat is widening too.
      const loose = await rejection(asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30, caveats: { maxBytes: 11 } }))
      expect([loose.status, loose.details['reason'], loose.details['field']]).toEqual([403, 'widen', 'caveats.maxBytes'])
      // What it may mint: at most itself, with its caveat and its jti as prf.
      const ok = await asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30 })
      expect(payloadOf(ok.token)).toMatchObject({ scope: 'passport:issue', aud: ['passport'], prf: child.jti, ron: { maxBytes: 10 } })
      expect(payloadOf(ok.token).exp).toBeLessThanOrEqual(child.exp)
    } finally {
      await close()
    }
  })

  it('a token issued from a token dies with it: revoking the issuer revokes what it minted', async () => {
    const { client, transport, admin, close } = await setup()
    try {
      const child = await client.attenuate({ token: admin.token, scope: ['passport:issue', 'storage:write'], ttlSec: 600 })
      const minted = await createPassportClient(transport, { token: child.token }).issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 300 })
      expect(payloadOf(minted.token).prf).toBe(child.jti)
      const r = await client.revoke({ jti: child.jti })
      expect(new Set(r.revoked)).toEqual(new Set([child.jti, minted.jti]))
      expect(await client.verify(minted.token)).toEqual({ valid: false, reason: 'revoked' })
      expect(await client.verify(admin.token)).toMatchObject({ valid: true })
    } finally {
      await close()
    }
  })
})
