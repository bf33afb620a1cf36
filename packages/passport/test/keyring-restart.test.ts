import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ALL_SCOPES, MemoryTransport } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createPassportClient, createPassportService, type PassportService } from '../src/index.js'
import { ADMIN_POLICY, T0 } from './helpers.js'

describe('key retirement across a restart', () => {
  it('a long-lived token signed by a key that later rotates out keeps that key verifying after a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'passport-'))
    const clock = new VirtualClock(T0)
    const open = (): Promise<PassportService> => createPassportService({ clock, drainReadWindowMs: 0, dataDir: dir, policy: ADMIN_POLICY })
    let p: PassportService | undefined
    try {
      p = await open()
      const admin = await p.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
      await p.rotate()
      // A 29-day child of the admin token, signed by the key that is current now (not the admin token's).
      const transport = new MemoryTransport({ clock })
      transport.mount('passport', p)
      const child = await createPassportClient(transport).attenuate({ token: admin.token, ttlSec: 29 * 86400 })
      await transport.close()
      expect(child.kid).not.toBe(admin.kid)
      await p.close()

      p = await open()
      await p.rotate() // the child's key stops signing
      await clock.advance(2 * 3600 * 1000) // far past grace + max ttl; the janitor runs every minute
      expect(p.jwks().keys.map((k) => k.kid)).toContain(child.kid)
      expect((await p.verifier.verify(child.token, { audience: 'storage' })).prf).toBe(admin.jti)
    } finally {
      await p?.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
