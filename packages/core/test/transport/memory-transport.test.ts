import { describe, expect, it } from 'vitest'
import { MemoryTransport, isRonError, type RonRequest, type RonResponse } from '@ron/core'
import { checkPatternStream, memoryNetwork, memoryRequest, patternStream } from '@ron/core/testing'

async function* once(chunk: Uint8Array): AsyncGenerator<Uint8Array> {
  yield await Promise.resolve(chunk)
}

/** A target that records the request it saw and answers 200 with a multi-valued header. */
function recorder(): { target: { dispatch(req: RonRequest): Promise<RonResponse> }; seen: RonRequest[] } {
  const seen: RonRequest[] = []
  return {
    seen,
    target: {
      dispatch(req) {
        seen.push(req)
        return Promise.resolve({ status: 200, headers: { 'set-cookie': ['a=1', 'b=2'], 'x-one': 'v' }, body: once(new TextEncoder().encode('ok')) })
      },
    },
  }
}

describe('MemoryTransport', () => {
  it('builds the RonRequest: upper-case method, lower-case headers, content-length for byte bodies, remote address', async () => {
    const r = recorder()
    const t = new MemoryTransport({ remoteAddress: '10.0.0.7' })
    t.mount('svc', r.target)
    const res = await t.request('svc', { method: 'post', path: '/p?q=1', headers: { 'X-Corr-ID': 'c1', Authorization: 'Bearer t' }, body: 'héllo' })
    expect(res.headers).toEqual({ 'set-cookie': 'a=1, b=2', 'x-one': 'v' })
    expect(await res.text()).toBe('ok')
    const req = r.seen[0]!
    expect(req.method).toBe('POST')
    expect(req.url).toBe('/p?q=1')
    expect(req.headers).toMatchObject({ 'x-corr-id': 'c1', authorization: 'Bearer t', 'content-length': '6' })
    expect(req.remoteAddress).toBe('10.0.0.7')
    const chunks: Uint8Array[] = []
    for await (const c of req.body) chunks.push(c)
    expect(Buffer.concat(chunks).toString()).toBe('héllo')
  })

  it('fails like a refused connection while a target is unreachable, unmounted or never mounted', async () => {
    const r = recorder()
    const t = memoryNetwork({ svc: r.target })
    const call = () => t.request('svc', { method: 'GET', path: '/' }).catch((e: unknown) => e)
    t.setReachable('svc', false)
    const err = await call()
    expect(isRonError(err, 'NotReady')).toBe(true)
    expect((err as { details: unknown }).details).toEqual({ target: 'svc', reason: 'unreachable' })
    t.setReachable('svc', true)
    expect(await call()).toHaveProperty('status', 200)
    t.unmount('svc')
    expect(isRonError(await call(), 'NotReady')).toBe(true)
    const unmount = t.mount('svc', r.target)
    expect(t.targets).toEqual(['svc'])
    unmount()
    expect(isRonError(await call(), 'NotReady')).toBe(true)
    expect(r.seen).toHaveLength(1)
  })

  it('turns a target that throws into a typed error, and rejects an already-aborted signal without dispatching', async () => {
    const seen: string[] = []
    const t = new MemoryTransport()
    t.mount('bad', { dispatch: () => Promise.reject(new Error('kaboom')) })
    t.mount('rec', { dispatch: (req) => (seen.push(req.url), Promise.reject(new Error('never'))) })
    expect(isRonError(await t.request('bad', { method: 'GET', path: '/' }).catch((e: unknown) => e), 'Internal')).toBe(true)
    const ac = new AbortController()
    ac.abort()
    expect(isRonError(await t.request('rec', { method: 'GET', path: '/', signal: ac.signal }).catch((e: unknown) => e), 'Canceled')).toBe(true)
    expect(seen).toEqual([])
  })

  it('memoryRequest sends one request without a standing transport', async () => {
    const r = recorder()
    const res = await memoryRequest(r.target, { method: 'GET', path: '/x' })
    expect(res.status).toBe(200)
    await res.dump()
  })

  it('patternStream / checkPatternStream detect a corrupted byte across chunk boundaries', async () => {
    expect(await checkPatternStream(patternStream(1000, 300))).toEqual({ bytes: 1000, maxChunk: 300, intact: true })
    async function* corrupt(): AsyncGenerator<Uint8Array> {
      let i = 0
      for await (const c of patternStream(1000, 300)) {
        if (i++ === 2) c[17] = (c[17]! + 1) % 256
        yield c
      }
    }
    expect(await checkPatternStream(corrupt())).toMatchObject({ bytes: 1000, intact: false })
  })
})

describe('MemoryTransport dump()', () => {
  it('regression: dumping a streamed response that was never read releases the producer (its return() runs)', async () => {
    let returned = 0
    const target = {
      dispatch(): Promise<RonResponse> {
        const body: AsyncIterable<Uint8Array> = {
          [Symbol.asyncIterator]: () => ({
            next: () => Promise.resolve({ done: false as const, value: new Uint8Array(8) }),
            return: () => {
              returned++
              return Promise.resolve({ done: true as const, value: undefined })
            },
          }),
        }
        return Promise.resolve({ status: 200, headers: {}, body })
      },
    }
    const t = new MemoryTransport()
    t.mount('svc', target)
    for (let i = 0; i < 3; i++) {
      const res = await t.request('svc', { method: 'GET', path: '/stream' })
      await res.dump()
    }
    // Before the fix an unread body had no iterator yet, so nothing was returned: the service
    // kept the work-pool slot, the admission slot and the open file of every dumped response.
    expect(returned).toBe(3)
    await t.close()
  })
})
