import { describe, expect, it } from 'vitest'
import { createPassportClient } from '../src/index.js'
import { setup } from './helpers.js'

describe('policy lookup', () => {
  it('a caller named like an Object.prototype member (constructor, toString, __proto__) gets a typed 403, not a 500', async () => {
    const { passport, transport, close } = await setup()
    try {
      for (const sub of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        const t = await passport.mintAdminToken({ sub, aud: ['passport'], scope: ['passport:issue'], ttlSec: 600 })
        const client = createPassportClient(transport, { token: t.token })
        await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:read'] })).rejects.toMatchObject({ status: 403, code: 'Forbidden', details: { reason: 'policy', field: 'sub' } })
      }
    } finally {
      await close()
    }
  })
})
