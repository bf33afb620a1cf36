/**
 * Readiness from real dependencies (issue 21): `store` (the name store is open), `sources` (a peer
 * whose breaker is not open, or something held locally) and `disk` (name writes). One test per
 * dependency breaks it and sees its path — and only it — go unready.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { NotReadyError } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createMemoryNameStore } from '../src/index.js'
import type { NameStore } from '../src/index.js'
import { FakePeer, addr, manifestFor, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

describe('readiness per path', () => {
  it('store: a name store closed by its owner turns both paths unready (missing: store)', async () => {
    const store = createMemoryNameStore()
    env = await setup({ nameStore: store })
    expect(env.index.health()).toMatchObject({ ready: true, writeReady: true, paths: { resolve: true, names: true } })
    await store.close()
    const h = env.index.health()
    expect(h).toMatchObject({ ready: false, writeReady: false, paths: { resolve: false, names: false } })
    expect(h.missing).toContain('store')
    const readyz = await env.request('GET', '/readyz')
    expect(readyz.status).toBe(503)
    await readyz.dump()
  })

  it('sources: every peer breaker open with nothing held locally turns resolve unready, not names; a local record or a half-open breaker brings it back', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, breaker: { minCalls: 1, cooldownMs: 10_000 }, purgeIntervalMs: 1_000 }, { clock })
    const peer = new FakePeer(clock)
    peer.reply = () => ({ status: 500 })
    env.transport.mount('peer-1', peer)
    expect(env.index.health()).toMatchObject({ ready: true, paths: { resolve: true, names: true } })
    await expect(env.anon.resolve(addr('trip'))).rejects.toMatchObject({ code: 'Unavailable' })
    const h = env.index.health()
    expect(h).toMatchObject({ ready: false, paths: { resolve: false, names: true } })
    expect(h.missing).toContain('sources')
    expect(h.missing).not.toContain('store')
    // A provider record held here is a source: ready again while it lives.
    await env.announcer('n1').announce({ address: addr('local'), node: 'n1', endpoint: 'storage', ttlSec: 2 })
    expect(env.index.health()).toMatchObject({ ready: true, paths: { resolve: true } })
    // The record expires and the janitor purges it: unready again.
    for (let i = 0; i < 3; i++) await clock.advance(1_000)
    expect(env.index.health()).toMatchObject({ ready: false, paths: { resolve: false, names: true } })
    // After the cooldown the breaker half-opens: the peer may be asked again, ready.
    await clock.advance(7_000)
    expect(env.index.health()).toMatchObject({ ready: true, paths: { resolve: true } })
  })

  it('sources: without peers the index is its own source (ready with nothing held)', async () => {
    env = await setup({})
    expect(env.index.health()).toMatchObject({ ready: true, paths: { resolve: true } })
  })

  it('disk: a name write the disk refuses turns names unready (missing: disk) while resolve stays ready', async () => {
    const clock = new VirtualClock(1_000_000)
    const inner = createMemoryNameStore()
    const full = (): NotReadyError => new NotReadyError('disk full', { details: { reason: 'disk_full' } })
    const store: NameStore = Object.assign(Object.create(inner) as NameStore, {
      put: () => Promise.reject(full()),
      probe: () => Promise.reject(full()),
    })
    env = await setup({ nameStore: store }, { clock })
    const m = await env.put(manifestFor(1))
    await expect(env.client.setName('full.disk', m)).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'disk_full' } })
    const h = env.index.health()
    expect(h).toMatchObject({ ready: true, writeReady: false, paths: { resolve: true, names: false } })
    expect(h.missing).toContain('disk')
    expect(await env.index.metricsText()).toMatch(/index_store_faults_total\{reason="disk_full"[^}]*\} 1/)
  })
})
