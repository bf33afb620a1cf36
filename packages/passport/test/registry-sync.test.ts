/**
 * Registry Sync (seed svc-passport §2 task 6, §5 "Registry fetch: deadline 3 s, retry with
 * backoff"; issue 21): passport reads its issuance policy and the signer sets of its issuer from a
 * REAL registry's HEAD through the transport; a slow registry times out on the injected clock
 * (`io_timeouts_total{op="registry"}` moves) and is retried with backoff; while it is down or
 * serves a bad set the last good state stays in force and the `registry` readiness path says why.
 * Deterministic: virtual time and a fixed random, no sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ALL_SCOPES, MemoryTransport, UnavailableError, type RonRequest, type RonService } from '@ron/core'
import { VirtualClock, createTestIssuer } from '@ron/core/testing'
import { createRegistryClient, createRegistryService, generateSignerKey, type RegistryService } from '@ron/registry'
import { createPassportClient, createPassportService, type PassportService } from '../src/index.js'
import { metricValue, payloadOf, rejection, until } from './helpers.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const REGISTRY_SCOPES = ['registry:propose', 'registry:approve', 'registry:commit']
const SYNC = { intervalMs: 10_000, timeoutMs: 1000, backoffBaseMs: 500, backoffMaxMs: 4000 }
const half = { next: () => 0.5 }

/** A real registry (1-of-1 signers) on `transport`, behind a switch that stalls or fails its requests. */
async function registryOn(transport: MemoryTransport, clock: VirtualClock) {
  const issuer = createTestIssuer()
  const signer = generateSignerKey('s1')
  const registry: RegistryService = await createRegistryService({ origin: 'test.ron/registry', signers: { threshold: 1, signers: [{ id: signer.id, publicKey: signer.publicKey }] }, drainReadWindowMs: 0 }, undefined, { auth: { keys: issuer.keys }, clock })
  const fault = { mode: 'ok' as 'ok' | 'stall' | 'down' }
  const faulty: RonService = {
    ...registry,
    dispatch: (req: RonRequest) => {
      // The registry's process is gone: the call fails before any answer.
      if (fault.mode === 'down') return Promise.reject(new UnavailableError('registry unreachable', { details: { reason: 'unreachable' } }))
      if (fault.mode === 'stall') return new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(req.signal.reason as Error), { once: true }))
      return registry.dispatch(req)
    },
  }
  transport.mount('registry', faulty)
  const client = createRegistryClient(transport, { token: issuer.mint({ aud: ['registry'], scope: REGISTRY_SCOPES }) })
  async function commit(items: unknown[]): Promise<number> {
    const p = await client.propose({ schemaVersion: 1, items } as never)
    await client.approveWith(p.proposalId, signer)
    return (await client.commit(p.proposalId)).version
  }
  cleanups.push(() => registry.close())
  return { fault, commit }
}

/** A passport's published keys as an `issuer-keys` descriptor accepts them. */
function issuerKeys(p: PassportService): unknown[] {
  return p.jwks().keys.map((k) => ({ kty: k.kty, crv: k.crv, x: k.x, kid: k.kid }))
}

const POLICY = { maxTtlSec: 600, defaultTtlSec: 300, callers: { admin: { scopes: ['*'], audiences: ['*'] } } }

async function start() {
  const clock = new VirtualClock(Date.now())
  const transport = new MemoryTransport({ clock })
  cleanups.push(() => transport.close())
  const reg = await registryOn(transport, clock)
  // Another passport signing as the same issuer (another node): its key set goes into the registry.
  const peer = await createPassportService({ drainReadWindowMs: 0 }, undefined, { clock })
  cleanups.push(() => peer.close())
  const version = await reg.commit([
    { kind: 'policy', name: 'passport', rules: POLICY },
    { kind: 'issuer-keys', issuer: 'passport', keys: issuerKeys(peer) },
    { kind: 'issuer-keys', issuer: 'someone-else', keys: issuerKeys(await foreign(clock)) },
  ])
  const passport = await createPassportService({ registry: SYNC, drainReadWindowMs: 0 }, transport, { clock, random: half })
  cleanups.push(() => passport.close())
  transport.mount('passport', passport)
  await until(() => passport.health().paths['registry'] === true, 'the first sync')
  return { clock, transport, reg, peer, passport, version }
}

let foreignPassport: PassportService | undefined
async function foreign(clock: VirtualClock): Promise<PassportService> {
  foreignPassport = await createPassportService({ issuer: 'someone-else', drainReadWindowMs: 0 }, undefined, { clock })
  const f = foreignPassport
  cleanups.push(() => f.close())
  return f
}

describe('registry sync: policy and signer sets from the registry', () => {
  it('issues under the registry policy (none in config) and verifies the tokens of the signer set of its own issuer only', async () => {
    const { passport, peer, transport, version } = await start()
    expect(passport.health()).toMatchObject({ ready: true, writeReady: true, paths: { issue: true, verify: true, registry: true } })
    expect(await metricValue(passport, 'registry_version')).toBe(version)
    const admin = await passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 86400 })
    const client = createPassportClient(transport, { token: admin.token })
    // The registry's policy: max ttl 600 (a longer one is refused), default 300.
    expect((await rejection(client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 3600 }))).status).toBe(403)
    const t = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
    expect(payloadOf(t.token).exp - payloadOf(t.token).iat).toBe(300)
    // A token of the peer (same issuer, its key set in the registry) verifies here…
    const fromPeer = await peer.mintAdminToken({ aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })
    expect(await client.verify(fromPeer.token)).toMatchObject({ valid: true })
    // …one of another issuer's passport does not, though its keys are in the registry too.
    const other = await foreignPassport!.mintAdminToken({ aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })
    expect(await client.verify(other.token)).toMatchObject({ valid: false })
  })

  it('a slow registry times out on the injected clock (io_timeouts_total{op="registry"}), is retried with backoff, and the last good policy stays in force', async () => {
    const { passport, clock, reg } = await start()
    expect(await metricValue(passport, 'io_timeouts_total', { op: 'registry' })).toBe(0)
    reg.fault.mode = 'stall'
    // The next sync (intervalMs with a fixed random) stalls; its deadline is timeoutMs.
    await clock.advance(SYNC.intervalMs)
    expect(passport.health().paths['registry']).toBe(true)
    await clock.advance(SYNC.timeoutMs)
    await until(() => passport.health().paths['registry'] === false, 'the timeout to be noticed')
    expect(await metricValue(passport, 'io_timeouts_total', { op: 'registry' })).toBe(1)
    expect(await metricValue(passport, 'backoff_retries_total', { op: 'registry' })).toBe(1)
    const h = passport.health()
    expect(h.reason).toContain('registry: registry_timeout')
    // Issuance goes on under the last good policy.
    expect(h.paths).toMatchObject({ issue: true, verify: true })
    await expect(passport.mintServiceToken({ sub: 'node:n1', aud: 'storage', scope: ['storage:read'], ttlSec: 60 })).resolves.toBeDefined()
    // Backoff: the retry comes after 500 × 0.75 ms (half jittered), then times out again.
    await clock.advance(375)
    await clock.advance(SYNC.timeoutMs)
    await until(async () => (await metricValue(passport, 'io_timeouts_total', { op: 'registry' })) === 2, 'the retry to time out')
    // The registry answers again: the next retry (1000 × 0.75 ms later) syncs.
    reg.fault.mode = 'ok'
    await clock.advance(750)
    await until(() => passport.health().paths['registry'] === true, 'the registry to be reachable again')
    expect(passport.health().missing).toEqual([])
  })

  it('a registry that is down or serves a set that does not parse: the last good state stays, readiness says why; a good HEAD is taken', async () => {
    const { passport, clock, reg } = await start()
    reg.fault.mode = 'down'
    await clock.advance(SYNC.intervalMs)
    await until(() => passport.health().paths['registry'] === false, 'the failure to be noticed')
    expect(passport.health().reason).toContain('registry: registry_unreachable')
    expect(passport.health().paths['issue']).toBe(true)
    reg.fault.mode = 'ok'
    // A HEAD whose passport policy is not a policy: refused whole, the last good one stays.
    const bad = await reg.commit([{ kind: 'policy', name: 'passport', rules: { maxTtlSec: 60, defaultTtlSec: 900 } }])
    await clock.advance(375)
    await until(() => (passport.health().reason ?? '').includes('registry_invalid'), 'the bad set to be refused')
    expect(await metricValue(passport, 'registry_version')).toBe(bad - 1)
    expect(passport.health().paths['issue']).toBe(true)
    // A HEAD without a passport policy: issuance falls back to the config's (none here): issue unready.
    const none = await reg.commit([{ kind: 'policy', name: 'other', rules: {} }])
    await clock.advance(750)
    await until(() => passport.health().paths['registry'] === true, 'the good set to be taken')
    expect(await metricValue(passport, 'registry_version')).toBe(none)
    expect(passport.health().paths['issue']).toBe(false)
    const e = await rejection(passport.mintServiceToken({ sub: 'node:n1', aud: 'storage', scope: ['storage:read'], ttlSec: 60 }))
    expect(e.details['reason']).toBe('no_policy')
  })

  it('without a transport the sync answers no_transport and the registry path stays unready; nothing else is affected', async () => {
    const clock = new VirtualClock(Date.now())
    const passport = await createPassportService({ registry: SYNC, drainReadWindowMs: 0, policy: POLICY }, undefined, { clock, random: half })
    cleanups.push(() => passport.close())
    await until(() => (passport.health().reason ?? '').includes('registry_unreachable'), 'the first sync to fail')
    expect(passport.health()).toMatchObject({ ready: true, writeReady: true, paths: { issue: true, verify: true, registry: false } })
  })
})
