/**
 * Passport's drain (SPEC.md 3.3/3.3a, seed svc-passport §6 "issuance not-ready while verification
 * may stay up"), on virtual time: issuance and revocation are refused and unready at once while
 * verification is served through the read window; then intake stops (503 Draining +
 * Retry-After, /healthz still 200); an issuance in flight finishes within the deadline, one still
 * signing at the deadline is aborted and counted.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { isRonError } from '@ron/core'
import { controllableKms, metricValue, rejection, setup, until } from './helpers.js'

let done: (() => Promise<void>) | undefined
afterEach(async () => {
  await done?.()
  done = undefined
})

const ISSUE = { sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 }

describe('drain order: issuance shed before verification', () => {
  it('refuses issue and revoke at once, verifies through the read window, then 503 for everything new; the in-flight issuance finishes', async () => {
    const kms = controllableKms()
    const p = await setup({ keystore: kms, drainReadWindowMs: 1000, drainDeadlineMs: 2000, kms: { timeoutMs: 60_000, breaker: false } })
    done = async () => {
      kms.release()
      await p.transport.close()
    }
    const held = await p.client.issue(ISSUE)
    kms.hold()
    const inFlight = p.client.issue(ISSUE)
    await until(() => kms.held === 1, 'the issuance to reach the KMS')

    let closed = false
    const closing = p.passport.close().then(() => (closed = true))
    await p.clock.flush()
    // The read window: writes unready and refused, verification ready and served.
    expect(p.passport.health()).toMatchObject({ ready: true, writeReady: false, paths: { issue: false, revoke: false, verify: true } })
    const issue = await rejection(p.client.issue(ISSUE))
    expect([issue.status, issue.code, issue.details['phase']]).toEqual([503, 'Draining', 'writes'])
    expect((await rejection(p.client.revoke({ jti: held.jti }))).code).toBe('Draining')
    expect(await p.client.verify(held.token)).toMatchObject({ valid: true })
    const readyz = await p.transport.request('passport', { method: 'GET', path: '/readyz' })
    expect(readyz.status).toBe(200)
    await readyz.dump()

    // The window ends: intake stops, verification too; /healthz stays 200.
    await p.clock.advance(1000)
    expect(p.passport.health()).toMatchObject({ ready: false, writeReady: false, paths: { issue: false, revoke: false, verify: false } })
    const late = await p.transport.request('passport', { method: 'POST', path: '/v1/passport/verify', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: held.token }) })
    expect(late.status).toBe(503)
    expect(late.headers['retry-after']).toBe('1')
    expect((await late.json<{ error: { code: string } }>()).error.code).toBe('Draining')
    const healthz = await p.transport.request('passport', { method: 'GET', path: '/healthz' })
    expect(healthz.status).toBe(200)
    await healthz.dump()

    // The issuance accepted before the drain completes within the deadline.
    expect(closed).toBe(false)
    kms.release()
    const token = await inFlight
    expect(token.token.split('.')).toHaveLength(3)
    while (!closed) await p.clock.advance(100)
    await closing
    expect(await metricValue(p.passport, 'tasks_aborted_total', { kind: 'issue-worker' })).toBe(0)
  })

  it('an issuance still signing at the drain deadline is aborted and counted; close() resolves', async () => {
    const kms = controllableKms()
    const p = await setup({ keystore: kms, drainReadWindowMs: 500, drainDeadlineMs: 2000, kms: { timeoutMs: 60_000, breaker: false } })
    done = async () => {
      kms.release()
      await p.transport.close()
    }
    kms.hold()
    const inFlight = p.client.issue(ISSUE).catch((e: unknown) => e)
    await until(() => kms.held === 1, 'the issuance to reach the KMS')
    let closed = false
    const closing = p.passport.close().then(() => (closed = true))
    await p.clock.advance(500)
    expect(p.passport.health().ready).toBe(false)
    await p.clock.advance(2000)
    while (!closed) await p.clock.advance(100)
    await closing
    const e = await inFlight
    expect(isRonError(e)).toBe(true)
    expect((e as { status: number }).status).toBeGreaterThanOrEqual(500)
    expect((e as { code: string }).code).toBe('Draining')
    expect(await metricValue(p.passport, 'tasks_aborted_total', { kind: 'issue-worker' })).toBe(1)
  })
})
