import { describe, expect, it } from 'vitest'
import { REDACTED, redactConfig } from '../../src/config/index.js'

describe('redactConfig', () => {
  it('masks values of secret-looking keys at any depth and keeps the rest', () => {
    const input = {
      port: 1,
      auth: { adminToken: 'tok', issuerKey: { d: 'x' }, keys: [{ x: 'pub' }], tokenTtl: 60, adminTokenTtl: '1y', tokenFile: '/t' },
      snake: { private_key: 'pk', api_token: 't', 'client-secret': 's' },
      interop: { providers: [{ name: 'gh', webhookSecret: 's', apiKey: 'k' }] },
      db: { password: 'p', passwd: 'q', user: 'u' },
      authorization: 'Bearer x',
      unset: { secret: undefined },
    }
    const out = redactConfig(input)
    expect(out).toEqual({
      port: 1,
      auth: { adminToken: REDACTED, issuerKey: REDACTED, keys: [{ x: 'pub' }], tokenTtl: 60, adminTokenTtl: '1y', tokenFile: '/t' },
      snake: { private_key: REDACTED, api_token: REDACTED, 'client-secret': REDACTED },
      interop: { providers: [{ name: 'gh', webhookSecret: REDACTED, apiKey: REDACTED }] },
      db: { password: REDACTED, passwd: REDACTED, user: 'u' },
      authorization: REDACTED,
      unset: { secret: undefined },
    })
    expect(input.auth.adminToken).toBe('tok') // no mutation
  })

  it('cuts cycles', () => {
    const a: Record<string, unknown> = { x: 1 }
    a['self'] = a
    expect(redactConfig(a)).toEqual({ x: 1, self: '[circular]' })
  })
})
