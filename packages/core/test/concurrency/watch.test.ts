import { describe, expect, it } from 'vitest'
import { CanceledError, ClosedError, Watch } from '@ron/core'

describe('Watch', () => {
  it('get returns the latest snapshot and version counts sets', () => {
    const w = new Watch({ n: 1 })
    expect(w.get()).toEqual({ n: 1 })
    expect(w.version).toBe(0)
    w.set({ n: 2 })
    w.set({ n: 3 })
    expect(w.get()).toEqual({ n: 3 })
    expect(w.version).toBe(2)
  })

  it('changed resolves on the next set after the call, not on earlier ones', async () => {
    const w = new Watch(0)
    w.set(1)
    const next = w.changed()
    expect(w.listenerCount).toBe(1) // still waiting: the earlier set(1) did not satisfy it
    w.set(2)
    await expect(next).resolves.toBe(2)
  })

  it('changed rejects CanceledError on abort and removes its waiter', async () => {
    const w = new Watch('a')
    const ac = new AbortController()
    const p = w.changed(ac.signal)
    expect(w.listenerCount).toBe(1)
    ac.abort()
    await expect(p).rejects.toBeInstanceOf(CanceledError)
    expect(w.listenerCount).toBe(0)
  })

  it('subscribe calls back on each set until disposed; a throwing subscriber does not starve the others', () => {
    const w = new Watch(0)
    const a: number[] = []
    const b: number[] = []
    const offA = w.subscribe((v) => a.push(v))
    const offBad = w.subscribe(() => {
      throw new Error('bad subscriber')
    })
    w.subscribe((v) => b.push(v))
    expect(() => w.set(1)).toThrow('bad subscriber')
    offBad()
    offA()
    w.set(2)
    expect(a).toEqual([1])
    expect(b).toEqual([1, 2])
  })

  it('close rejects pending changed() with ClosedError; set after close throws; get keeps working', async () => {
    const w = new Watch(5)
    const p = w.changed()
    w.close()
    w.close()
    await expect(p).rejects.toBeInstanceOf(ClosedError)
    await expect(w.changed()).rejects.toBeInstanceOf(ClosedError)
    expect(() => w.set(6)).toThrow(ClosedError)
    expect(w.get()).toBe(5)
  })
})
