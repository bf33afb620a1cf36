import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ALL_SCOPES, createTokenVerifier, exportIssuerKey, generateIssuerKey, signToken, staticKeySource } from '@ron/core'
import { VirtualClock, metricValue } from '@ron/core/testing'
import { createPassportClient, createPassportService, ensureAdminToken, rotateWithAdminToken } from '../src/index.js'
import { ADMIN_POLICY, T0, controllableKms, headerOf, setup, until } from './helpers.js'

describe('rotation', () => {
  it('next becomes current, a new next is published, the old current stays verify-only with a retirement time', async () => {
    const { client, passport, close } = await setup()
    try {
      const before = await client.keys()
      const cur = before.keys.find((k) => k.status === 'current')!
      const next = before.keys.find((k) => k.status === 'next')!
      expect([cur.epoch, next.epoch]).toEqual([1, 2])
      const r = await client.rotate()
      expect(r.current).toEqual({ kid: next.kid, epoch: 2 })
      expect(r.next.epoch).toBe(3)
      const after = await client.keys()
      const prev = after.keys.find((k) => k.kid === cur.kid)!
      expect(prev.status).toBe('previous')
      // Retires after the longest of: grace 10 min, policy max ttl 1 h + KMS deadline, the admin token (30 days), + tolerance.
      expect(prev.retiresAt).toBe(T0 + 30 * 86400 * 1000 + 30_000)
      expect(prev.rotatedOutAt).toBe(T0)
      expect(after.keys.find((k) => k.status === 'next')!.kid).toBe(r.next.kid)
      // Epoch gauge follows.
      expect(metricValue(await passport.metricsText(), 'epoch_current', { service: 'passport' })).toBe(2)
    } finally {
      await close()
    }
  })

  it('a previous key retires after max ttl + KMS deadline + tolerance (≥ the 10 min grace) once nothing long-lived holds it', async () => {
    const { client, passport, clock, admin, close } = await setup()
    try {
      const old = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 3600 })
      const oldKid = old.kid
      await client.rotate()
      // The admin token signed by the old key still holds it: retire it (as ron-node does after
      // minting a new one). Retiring, not revoking: the token it issued stays valid.
      await passport.retire(admin.jti)
      const prev = passport.jwks().keys.find((k) => k.kid === oldKid)!
      expect(prev.retiresAt).toBe(T0 + 3600_000 + 3000 + 30_000)
      // Tokens the old key signed keep verifying until then...
      await clock.advanceTo(prev.retiresAt! - 31_000)
      expect(await passport.verifier.verify(old.token, { audience: 'storage' })).toMatchObject({ jti: old.jti })
      expect(await passport.keys.getKey(oldKid)).toBeDefined()
      // ...and the key is gone from the published set and the verifying keys afterwards (before the janitor runs).
      await clock.advanceTo(prev.retiresAt!)
      expect(passport.jwks().keys.map((k) => k.kid)).not.toContain(oldKid)
      expect(await passport.keys.getKey(oldKid)).toBeUndefined()
      expect(await passport.keys.getKey(passport.keySummary().current.kid)).toBeDefined()
      // The janitor drops it from the ring (and the KMS) on its next tick.
      await clock.advance(60_000)
      expect(passport.jwks().keys).toHaveLength(2)
    } finally {
      await close()
    }
  })

  it('with a short max ttl the 10 min grace still holds', async () => {
    const { client, passport, admin, close } = await setup({ policy: { ...ADMIN_POLICY, maxTtlSec: 60, defaultTtlSec: 60 } })
    try {
      const kid = (await client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] })).kid
      await passport.rotate()
      await passport.retire(admin.jti)
      expect(passport.jwks().keys.find((k) => k.kid === kid)!.retiresAt).toBe(T0 + 600_000 + 30_000)
    } finally {
      await close()
    }
  })

  it('under concurrent issuance every token names the key that signed it', async () => {
    const { client, passport, close } = await setup({ issueWorkers: 4 })
    try {
      const issued: Array<{ token: string; kid: string }> = []
      for (let round = 0; round < 5; round++) {
        // Each round's issuances race its rotation.
        const pending: Promise<{ token: string; kid: string }>[] = []
        for (let i = 0; i < 20; i++) pending.push(client.issue({ sub: `s${i}`, aud: ['storage'], scope: ['storage:write'] }))
        pending.push(passport.rotate().then(() => ({ token: '', kid: '' })))
        issued.push(...(await Promise.all(pending)).filter((t) => t.token !== ''))
      }
      expect(issued).toHaveLength(100)
      const keys = passport.jwks()
      const verifier = createTokenVerifier({ keys: staticKeySource(keys), clock: new VirtualClock(T0), cache: false })
      const kids = new Set<string>()
      for (const t of issued) {
        expect(headerOf(t.token)['kid']).toBe(t.kid)
        kids.add(t.kid)
        // The signature verifies with the key the header names (a mismatch would be bad_signature).
        await expect(verifier.verify(t.token, { audience: 'storage' })).resolves.toBeDefined()
      }
      expect(kids.size).toBeGreaterThan(1)
    } finally {
      await close()
    }
  })

  it('a key rotated out stops signing at once: an issuance whose signature was in flight is signed again with the new key', async () => {
    const kms = controllableKms()
    const { client, passport, close } = await setup({ keystore: kms })
    try {
      const oldKid = passport.keySummary().current.kid
      kms.hold()
      const pending = client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      await until(() => kms.held === 1, 'the issuance is being signed by the old key')
      const r = await passport.rotate()
      kms.release()
      const t = await pending
      expect(r.previous.map((k) => k.kid)).toEqual([oldKid])
      expect([t.kid, headerOf(t.token)['kid']]).toEqual([r.current.kid, r.current.kid])
      await expect(passport.verifier.verify(t.token, { audience: 'storage' })).resolves.toMatchObject({ jti: t.jti })
    } finally {
      kms.release()
      await close()
    }
  })

  it('scheduled rotation rotates every rotation.everyMs', async () => {
    const { passport, clock, close } = await setup({ rotation: { everyMs: 86_400_000 } })
    try {
      expect(passport.jwks().keys.find((k) => k.status === 'current')!.epoch).toBe(1)
      await clock.advance(86_400_000)
      expect(passport.jwks().keys.find((k) => k.status === 'current')!.epoch).toBe(2)
      await clock.advance(86_400_000)
      expect(passport.jwks().keys.find((k) => k.status === 'current')!.epoch).toBe(3)
    } finally {
      await close()
    }
  })
})

describe('keys at rest', () => {
  it('an existing issuer key becomes epoch 1: tokens it signed before stay valid; the data dir survives a restart (0600 files)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'passport-'))
    try {
      const clock = new VirtualClock(T0)
      const issuerKey = generateIssuerKey({ epoch: 1 })
      await writeFile(join(dir, 'issuer.json'), exportIssuerKey(issuerKey), { mode: 0o600 })
      // A one-year admin token ron-node signed before passport existed.
      const legacy = signToken(issuerKey, { sub: 'admin', aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 365 * 86400 }, { clock })
      const dataDir = join(dir, 'passport')
      const first = await createPassportService({ clock, drainReadWindowMs: 0, dataDir, issuerKeyFile: join(dir, 'issuer.json'), policy: ADMIN_POLICY })
      expect(first.jwks().keys.find((k) => k.status === 'current')!.kid).toBe(issuerKey.kid)
      expect((await first.verifier.verify(legacy, { audience: 'storage', scope: 'storage:write' })).sub).toBe('admin')
      const t = await first.mintServiceToken({ sub: 'node:a', aud: 'storage', scope: ['storage:write'], ttlSec: 600 })
      await first.revoke('gone-jti')
      await first.rotate()
      await first.close()

      for (const name of ['keyring.json', 'revocations.jsonl']) expect((await stat(join(dataDir, name))).mode & 0o777).toBe(0o600)
      const keyFiles = await readdir(join(dataDir, 'keys'))
      expect(keyFiles).toHaveLength(3)
      for (const f of keyFiles) expect((await stat(join(dataDir, 'keys', f))).mode & 0o777).toBe(0o600)

      const second = await createPassportService({ clock, drainReadWindowMs: 0, dataDir, issuerKeyFile: join(dir, 'issuer.json'), policy: ADMIN_POLICY })
      try {
        const ring = second.jwks().keys
        expect(ring.map((k) => [k.epoch, k.status])).toEqual([
          [2, 'current'],
          [3, 'next'],
          [1, 'previous'],
        ])
        expect((await second.verifier.verify(t.token, { audience: 'storage' })).sub).toBe('node:a')
        expect(second.revocations.isRevoked('gone-jti')).toBe(true)
        const fresh = await second.mintServiceToken({ sub: 'node:a', aud: 'storage', scope: ['storage:write'], ttlSec: 600 })
        expect(fresh.kid).toBe(ring[0]!.kid)
      } finally {
        await second.close()
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the admin token', () => {
  it('ensureAdminToken keeps a valid token, renews one with under 10 days left and retires the old one (what it minted lives on)', async () => {
    const { passport, clock, transport, close } = await setup()
    try {
      const opts = { aud: ['passport', 'storage'], scope: [...ALL_SCOPES], clock }
      const first = await ensureAdminToken(passport, opts)
      expect(first.renewed).toBe(true)
      expect(first.exp).toBe(T0 / 1000 + 30 * 86400)
      const same = await ensureAdminToken(passport, { ...opts, current: first.token })
      expect([same.renewed, same.token]).toEqual([false, first.token])
      await clock.advance(21 * 86400 * 1000)
      const minted = await createPassportClient(transport, { token: first.token }).issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      const persisted: string[] = []
      const renewed = await ensureAdminToken(passport, { ...opts, current: first.token, persist: async (t) => void persisted.push(t.token) })
      expect(renewed.renewed).toBe(true)
      expect(persisted).toEqual([renewed.token])
      // Retired: the old admin token stops verifying at once; a token it minted stays valid.
      await expect(passport.verifier.verify(first.token, { audience: 'storage' })).rejects.toMatchObject({ details: { reason: 'revoked' } })
      await expect(passport.verifier.verify(minted.token, { audience: 'storage', scope: 'storage:write' })).resolves.toMatchObject({ prf: first.jti })
      expect(passport.revocations.isRevoked(first.jti)).toBe(true)
      expect((await createPassportClient(transport).revocations(0)).items).toEqual([expect.objectContaining({ jti: first.jti, cascade: false })])
      expect((await passport.verifier.verify(renewed.token, { audience: 'storage', scope: 'storage:admin' })).sub).toBe('admin')
    } finally {
      await close()
    }
  })

  it('rotateWithAdminToken mints the new admin token with the new key and lets the old key retire after max ttl', async () => {
    const { passport, clock, admin, close } = await setup()
    try {
      const oldKid = passport.keySummary().current.kid
      const { keys, admin: fresh } = await rotateWithAdminToken(passport, { current: admin.token, aud: ['passport'], scope: ['passport:admin'], clock })
      expect(fresh.kid).toBe(keys.current.kid)
      expect(fresh.kid).not.toBe(oldKid)
      expect(passport.revocations.isRevoked(admin.jti)).toBe(true)
      expect(keys.previous).toEqual([{ kid: oldKid, epoch: 1, retiresAt: T0 + 3600_000 + 3000 + 30_000 }])
    } finally {
      await close()
    }
  })
})

describe('retirement never cuts a token short', () => {
  it('lowering the max ttl by reload keeps a previous key until the tokens it signed expire', async () => {
    const { client, passport, admin, close } = await setup()
    try {
      const long = await client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 3600 })
      await passport.rotate()
      await passport.retire(admin.jti)
      await passport.reload({ policy: { maxTtlSec: 60, defaultTtlSec: 60 } })
      const prev = passport.keySummary().previous.find((k) => k.kid === long.kid)!
      expect(prev.retiresAt).toBe(long.exp * 1000 + 30_000)
    } finally {
      await close()
    }
  })
})

describe('onRotate', () => {
  it('lets the host re-mint its admin token on every rotation, including one requested over HTTP', async () => {
    const { client, passport, admin, close } = await setup()
    try {
      let current = admin.token
      const off = passport.onRotate(async () => {
        current = (await ensureAdminToken(passport, { current, aud: ['passport'], scope: ['passport:admin'], renewBelowSec: Infinity })).token
      })
      const r = await client.rotate()
      expect(current).not.toBe(admin.token)
      expect(passport.revocations.isRevoked(admin.jti)).toBe(true)
      expect(JSON.parse(Buffer.from(current.split('.')[0]!, 'base64url').toString()).kid).toBe(r.current.kid)
      // The rotation answered after the listener: the old key no longer waits for the old admin token.
      expect(r.previous[0]!.retiresAt).toBe(T0 + 3600_000 + 3000 + 30_000)
      off()
    } finally {
      await close()
    }
  })
})

describe('revocation log at rest', () => {
  it('compacts expired revocations on start without moving the feed seq backwards', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'passport-'))
    try {
      const clock = new VirtualClock(T0)
      const first = await createPassportService({ clock, drainReadWindowMs: 0, dataDir: dir, policy: ADMIN_POLICY })
      const short = await first.mintServiceToken({ sub: 'a', aud: 'storage', scope: ['storage:write'], ttlSec: 60 })
      await first.revoke(short.jti)
      const long = await first.mintServiceToken({ sub: 'b', aud: 'storage', scope: ['storage:write'], ttlSec: 3600 })
      const { seq } = await first.revoke(long.jti)
      await first.close()
      await clock.advance(600_000)
      const second = await createPassportService({ clock, drainReadWindowMs: 0, dataDir: dir, policy: ADMIN_POLICY })
      try {
        expect(second.revocations.isRevoked(long.jti)).toBe(true)
        const lines = (await readFile(join(dir, 'revocations.jsonl'), 'utf8')).trim().split('\n')
        expect(lines).toHaveLength(2) // header + the live one
        const next = await second.revoke('another')
        expect(next.seq).toBe(seq + 1)
      } finally {
        await second.close()
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
