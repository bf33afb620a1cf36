import { describe, expect, it } from 'vitest'
import { Readiness } from '@ron/core'

describe('Readiness', () => {
  it('is ready once every dependency reported ok, and tells reads from writes', () => {
    const r = new Readiness({ dependencies: [{ name: 'disk', gates: 'write' }, { name: 'keys', gates: 'read' }] })
    expect(r.report({ live: true })).toEqual({ live: true, ready: false, writeReady: false, paths: {}, missing: ['disk', 'keys'] })
    r.set('keys', true)
    expect(r.report({ live: true })).toEqual({ live: true, ready: true, writeReady: false, paths: {}, missing: ['disk'] })
    r.set('disk', true)
    expect(r.report({ live: true })).toEqual({ live: true, ready: true, writeReady: true, paths: {}, missing: [] })
    r.set('disk', false, 'disk full')
    expect(r.report({ live: true })).toEqual({ live: true, ready: true, writeReady: false, paths: {}, missing: ['disk'], reason: 'disk: disk full' })
  })

  it('a read-gating dependency going down takes writes down too', () => {
    const r = new Readiness({ dependencies: [{ name: 'peers', gates: 'read', ok: true }] })
    r.set('peers', false)
    expect(r.report({ live: true })).toMatchObject({ ready: false, writeReady: false })
  })

  it('drains writes first, then reads, and never moves back', () => {
    const r = new Readiness()
    expect(r.report({ live: true })).toMatchObject({ ready: true, writeReady: true })
    r.draining('writes')
    expect(r.report({ live: true })).toMatchObject({ ready: true, writeReady: false, paths: {}, missing: ['draining'] })
    r.draining('all')
    expect(r.report({ live: true })).toMatchObject({ ready: false, writeReady: false })
    r.draining('writes')
    expect(r.phase).toBe('all')
  })

  it('builds /readyz and /healthz replies with Retry-After on 503', () => {
    let live = { live: true } as { live: boolean; reason?: string }
    const r = new Readiness({ liveness: () => live, retryAfterMs: 2500 })
    expect(r.readyzReply()).toEqual({ status: 200, json: { live: true, ready: true, writeReady: true, paths: {}, missing: [] } })
    expect(r.healthzReply()).toEqual({ status: 200, json: { live: true } })
    r.set('kms', false)
    expect(r.readyzReply()).toEqual({
      status: 503,
      headers: { 'retry-after': '3' },
      json: { live: true, ready: false, writeReady: false, paths: {}, missing: ['kms'] },
    })
    live = { live: false, reason: 'crash loop: repair restarted 6 times in 60s' }
    expect(r.healthzReply()).toEqual({
      status: 503,
      headers: { 'retry-after': '3' },
      json: { live: false, reason: 'crash loop: repair restarted 6 times in 60s' },
    })
    expect(r.report()).toMatchObject({ live: false, ready: false, reason: 'crash loop: repair restarted 6 times in 60s' })
  })

  it('reports per-path readiness without changing ready/writeReady; unready paths name their reason in missing', () => {
    const r = new Readiness()
    r.setPath('verify', true)
    r.setPath('issue', false, 'kms_slow')
    r.setPath('rotate', false)
    expect(r.report({ live: true })).toEqual({
      live: true,
      ready: true,
      writeReady: true,
      paths: { verify: true, issue: false, rotate: false },
      missing: ['kms_slow', 'rotate'],
      reason: 'issue: kms_slow; rotate: rotate',
    })
    r.setPath('issue', true)
    r.setPath('rotate', true)
    expect(r.report({ live: true })).toEqual({ live: true, ready: true, writeReady: true, paths: { verify: true, issue: true, rotate: true }, missing: [] })
    expect(r.readyzReply({ live: true })).toMatchObject({ status: 200, json: { paths: { verify: true, issue: true } } })
    r.draining('all')
    expect(r.report({ live: true }).paths).toEqual({ verify: false, issue: false, rotate: false })
  })
})
