import { describe, expect, it } from 'vitest'
import { Broadcast, CanceledError, ClosedError } from '@ron/core'
import { RecordingMetrics } from '../../src/testing/index.js'

describe('Broadcast', () => {
  it('delivers every published value to every subscriber in order', async () => {
    const bus = new Broadcast<number>({ name: 't', capacity: 8 })
    const a = bus.subscribe()
    const b = bus.subscribe()
    expect(bus.publish(1)).toBe(2)
    bus.publish(2)
    expect(await a.recv()).toEqual({ value: 1 })
    expect(await a.recv()).toEqual({ value: 2 })
    expect(await b.recv()).toEqual({ value: 1 })
    expect(b.tryRecv()).toEqual({ value: 2 })
    expect(b.tryRecv()).toBeUndefined()
  })

  it('a slow subscriber loses the oldest events, is told how many it missed, and bus_lagged_total counts them', async () => {
    const metrics = new RecordingMetrics()
    const bus = new Broadcast<number>({ name: 'registry', capacity: 2, metrics })
    const slow = bus.subscribe()
    const fast = bus.subscribe()
    for (let i = 1; i <= 5; i++) {
      bus.publish(i)
      expect(await fast.recv()).toEqual({ value: i })
    }
    expect(await slow.recv()).toEqual({ lagged: 3 })
    expect(await slow.recv()).toEqual({ value: 4 })
    expect(await slow.recv()).toEqual({ value: 5 })
    expect(metrics.counter('bus_lagged_total', { topic: 'registry' })).toBe(3)
  })

  it('publish never waits: a waiting receiver is woken and subscribers that joined later see only later events', async () => {
    const bus = new Broadcast<string>({ capacity: 4 })
    const a = bus.subscribe()
    const pending = a.recv()
    bus.publish('x')
    const late = bus.subscribe()
    bus.publish('y')
    expect(await pending).toEqual({ value: 'x' })
    expect(await late.recv()).toEqual({ value: 'y' })
  })

  it('recv rejects CanceledError on abort and a second concurrent recv is refused', async () => {
    const bus = new Broadcast<number>({ capacity: 1 })
    const s = bus.subscribe()
    const ac = new AbortController()
    const r = s.recv(ac.signal)
    await expect(s.recv()).rejects.toThrow(/already pending/)
    ac.abort()
    await expect(r).rejects.toBeInstanceOf(CanceledError)
    bus.publish(1)
    expect(await s.recv()).toEqual({ value: 1 })
  })

  it('close on the broadcast lets subscribers drain their ring, then recv rejects ClosedError', async () => {
    const bus = new Broadcast<number>({ capacity: 4 })
    const s = bus.subscribe()
    const waiting = bus.subscribe()
    const w = waiting.recv()
    bus.publish(1)
    const w2 = waiting.recv()
    bus.close()
    bus.close()
    await expect(w).resolves.toEqual({ value: 1 })
    await expect(w2).rejects.toBeInstanceOf(ClosedError)
    expect(await s.recv()).toEqual({ value: 1 })
    await expect(s.recv()).rejects.toBeInstanceOf(ClosedError)
    expect(() => bus.publish(2)).toThrow(ClosedError)
    expect(() => bus.subscribe()).toThrow(ClosedError)
  })

  it('subscription close unsubscribes (also via Symbol.dispose)', async () => {
    const bus = new Broadcast<number>({ capacity: 4 })
    {
      using s = bus.subscribe()
      expect(bus.subscribers).toBe(1)
      s.close()
      expect(bus.subscribers).toBe(0)
      await expect(s.recv()).rejects.toBeInstanceOf(ClosedError)
    }
    {
      using _s = bus.subscribe()
      expect(bus.subscribers).toBe(1)
    }
    expect(bus.subscribers).toBe(0)
    expect(bus.publish(1)).toBe(0)
  })

  it('the async iterator yields values, reports lag through onLag and ends when the broadcast closes', async () => {
    const bus = new Broadcast<number>({ capacity: 2 })
    const lags: number[] = []
    const sub = bus.subscribe({ onLag: (n) => lags.push(n) })
    for (let i = 1; i <= 4; i++) bus.publish(i)
    bus.close()
    const got: number[] = []
    for await (const v of sub) got.push(v)
    expect(got).toEqual([3, 4])
    expect(lags).toEqual([2])
  })

  it('breaking out of the iterator closes the subscription', async () => {
    const bus = new Broadcast<number>({ capacity: 4 })
    const sub = bus.subscribe()
    bus.publish(1)
    bus.publish(2)
    for await (const v of sub) {
      expect(v).toBe(1)
      break
    }
    expect(sub.closed).toBe(true)
    expect(bus.subscribers).toBe(0)
  })
})
