/**
 * Readiness per path from real dependencies (SPEC.md 3.3a, docs/service-contract.md §3): for each
 * path, break the dependency it needs and see that path — and only it — go unready.
 * `issue` needs the KMS and a policy; `revoke` the disk (disk-faults.test.ts breaks it on a real
 * tmpfs); `verify` the key set loaded.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Readiness } from '@ron/core'
import { passportReadiness } from '../src/service.js'
import { controllableKms, rejection, setup } from './helpers.js'

let done: (() => Promise<void>) | undefined
afterEach(async () => {
  await done?.()
  done = undefined
})

describe('readiness per path', () => {
  it('no policy: issue unready (missing policy), revoke and verify ready; a reload with a policy brings issue back', async () => {
    const p = await setup({ policy: undefined })
    done = p.close
    const h = p.passport.health()
    expect(h).toMatchObject({ ready: true, writeReady: false, paths: { issue: false, revoke: true, verify: true } })
    expect(h.missing).toContain('policy')
    expect(h.reason).toContain('policy: no_policy')
    const e = await rejection(p.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] }))
    expect([e.status, e.details['reason']]).toEqual([503, 'no_policy'])
    await p.passport.reload({ policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] } } } })
    expect(p.passport.health()).toMatchObject({ ready: true, writeReady: true, paths: { issue: true, revoke: true, verify: true } })
  })

  it('a failing KMS: issue unready (missing kms), revoke and verify ready; verification keeps working', async () => {
    const kms = controllableKms()
    const p = await setup({ keystore: kms, kms: { breaker: false } })
    done = p.close
    const held = await p.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
    kms.fail = true
    const e = await rejection(p.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] }))
    expect([e.status, e.details['reason']]).toEqual([503, 'kms_failing'])
    const h = p.passport.health()
    expect(h).toMatchObject({ ready: true, writeReady: false, paths: { issue: false, revoke: true, verify: true } })
    expect(h.missing).toContain('kms')
    expect(await p.client.verify(held.token)).toMatchObject({ valid: true })
    expect(await p.client.revoke({ jti: held.jti })).toMatchObject({ revoked: [held.jti] })
    kms.fail = false
    await p.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
    expect(p.passport.health().paths).toMatchObject({ issue: true, revoke: true, verify: true })
  })

  it('the key set not loaded: verify unready and the service read-unready; issue and revoke are not affected by it', () => {
    let keys: number | undefined
    const spec = passportReadiness({ policy: () => ({ maxTtlSec: 3600, defaultTtlSec: 900, callers: {}, caveats: [] }), verifyingKeys: () => keys, disk: true, registry: false })
    const r = new Readiness()
    for (const d of spec.dependencies) r.dependency(d)
    for (const [name, path] of Object.entries(spec.paths)) r.declarePath(name, path)
    // Before the key ring opened.
    let h = r.report({ live: true })
    expect(h).toMatchObject({ ready: false, paths: { issue: true, revoke: true, verify: false } })
    expect(h.reason).toContain('keys: loading')
    keys = 0
    expect(r.report({ live: true }).reason).toContain('keys: no_keys')
    keys = 2
    h = r.report({ live: true })
    expect(h).toMatchObject({ ready: true, writeReady: true, paths: { issue: true, revoke: true, verify: true } })
    // The disk dependency gates revoke and issue, not verify.
    r.set('disk', false, 'disk_full')
    expect(r.report({ live: true })).toMatchObject({ ready: true, writeReady: false, paths: { issue: false, revoke: false, verify: true } })
    expect(spec.paths).toMatchObject({ issue: { shed: 'writes' }, revoke: { shed: 'writes' }, verify: { shed: 'reads' } })
  })

  it('a running passport reports the key set loaded (verify ready) once created', async () => {
    const p = await setup()
    done = p.close
    expect(p.passport.health()).toMatchObject({ ready: true, writeReady: true, paths: { issue: true, revoke: true, verify: true }, missing: [] })
  })
})
