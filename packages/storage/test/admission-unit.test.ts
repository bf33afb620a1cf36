/**
 * The work scheduler on a virtual clock: no real waits, no sockets. (The upload rate rule is
 * core's now: packages/core/test/http/slow-clients.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import { noopMetrics } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { WorkScheduler } from '../src/admission.js'

function scheduler(limits: { capacity: number; readers: number; writers: number; writersPerPrincipal: number }, signal = new AbortController().signal) {
  return new WorkScheduler({ name: 'work', metrics: noopMetrics, clock: new VirtualClock(), signal, ...limits })
}

describe('WorkScheduler', () => {
  it('grants free slots at once, queues the rest FIFO, and lets other principals pass a capped one', async () => {
    const s = scheduler({ capacity: 8, readers: 1, writers: 3, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    const a1 = await s.acquire('write', 'alice', 'PUT /o', sig)
    const a2 = s.acquire('write', 'alice', 'PUT /o', sig) // alice at her cap: waits
    const b1 = await s.acquire('write', 'bob', 'PUT /o', sig) // passes alice's waiting upload
    expect(s.depth).toBe(1)
    expect(s.active).toEqual({ read: 0, write: 2 })
    a1()
    await a2
    expect(s.writing('alice')).toBe(1)
    b1()
    expect(s.depth).toBe(0)
  })

  it('rejects with Busy only when the queue is full, and a waiter whose signal aborts leaves the queue', async () => {
    const s = scheduler({ capacity: 1, readers: 1, writers: 1, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    const held = await s.acquire('read', '', 'GET /o/:addr', sig)
    const ac = new AbortController()
    const waiting = s.acquire('read', '', 'GET /o/:addr', ac.signal)
    const full = s.acquire('read', '', 'GET /o/:addr', sig)
    await expect(full).rejects.toMatchObject({ code: 'Busy', details: { queue: 'work', endpoint: 'GET /o/:addr' } })
    ac.abort()
    await expect(waiting).rejects.toMatchObject({ code: 'Canceled' })
    expect(s.depth).toBe(0)
    held()
    expect(s.active.read).toBe(0)
  })

  it('asks for a lazily given signal only when the request has to wait', async () => {
    const s = scheduler({ capacity: 2, readers: 1, writers: 1, writersPerPrincipal: 1 })
    let asked = 0
    const ac = new AbortController()
    const lazy = (): AbortSignal => {
      asked++
      return ac.signal
    }
    const held = await s.acquire('read', '', 'GET /o/:addr', lazy)
    expect(asked).toBe(0) // granted at once: no signal created
    const waiting = s.acquire('read', '', 'GET /o/:addr', lazy)
    expect(asked).toBe(1)
    ac.abort()
    await expect(waiting).rejects.toMatchObject({ code: 'Canceled' })
    expect(s.depth).toBe(0)
    held()
  })

  it('cancels every waiter when the service is force-closed', async () => {
    const shutdown = new AbortController()
    const s = scheduler({ capacity: 4, readers: 1, writers: 1, writersPerPrincipal: 1 }, shutdown.signal)
    const sig = new AbortController().signal
    await s.acquire('write', 'a', 'PUT /o', sig)
    const w = s.acquire('write', 'b', 'PUT /o', sig)
    shutdown.abort()
    await expect(w).rejects.toMatchObject({ code: 'Canceled' })
  })

  it('configure() resizes live: more writers admit waiters at once', async () => {
    const s = scheduler({ capacity: 4, readers: 1, writers: 1, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    await s.acquire('write', 'a', 'PUT /o', sig)
    const w = s.acquire('write', 'b', 'PUT /o', sig)
    s.configure({ capacity: 4, readers: 1, writers: 2, writersPerPrincipal: 1 })
    await expect(w).resolves.toBeTypeOf('function')
  })
})
