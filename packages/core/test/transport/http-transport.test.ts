import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { HttpTransport, IntegrityFailedError, isRonError } from '@ron/core'

/** A raw node:http upstream answering with a programmable sequence of statuses. */
let server: http.Server
let url: string
let script: number[]
let hits: Array<{ method: string; path: string; body: string; corr: string | undefined }>

beforeEach(async () => {
  script = []
  hits = []
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      hits.push({ method: req.method ?? '', path: req.url ?? '', body: Buffer.concat(chunks).toString(), corr: req.headers['x-corr-id'] as string | undefined })
      const status = script.shift() ?? 200
      if (status === 0) {
        req.socket.destroy() // connection reset mid-request
        return
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterEach(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

const fastRetry = { tries: 3, baseMinMs: 0, baseMaxMs: 0 }

describe('HttpTransport', () => {
  it('retries an idempotent GET on 503 and on a reset connection, within the try budget', async () => {
    const t = new HttpTransport({ targets: { up: url }, retry: fastRetry, breaker: false })
    try {
      script = [503, 0, 200]
      const res = await t.request('up', { method: 'GET', path: '/x', headers: { 'x-corr-id': 'c-1' } })
      expect(res.status).toBe(200)
      await res.dump()
      expect(hits.map((h) => h.corr)).toEqual(['c-1', 'c-1', 'c-1'])

      script = [503, 503, 503]
      const last = await t.request('up', { method: 'GET', path: '/x' })
      expect(last.status).toBe(503) // tries exhausted: the last answer is returned, not thrown
      expect(await last.json()).toEqual({ status: 503 })
    } finally {
      await t.close()
    }
  })

  it('never retries a non-idempotent POST, nor an idempotent call whose body is a stream', async () => {
    const t = new HttpTransport({ targets: { up: url }, retry: fastRetry, breaker: false })
    try {
      script = [503, 200]
      const post = await t.request('up', { method: 'POST', path: '/x', body: 'once' })
      expect(post.status).toBe(503)
      await post.dump()
      expect(hits).toHaveLength(1)

      script = [503, 200]
      async function* stream(): AsyncGenerator<Uint8Array> {
        yield await Promise.resolve(new TextEncoder().encode('streamed'))
      }
      const put = await t.request('up', { method: 'PUT', path: '/x', idempotent: true, body: stream() })
      expect(put.status).toBe(503)
      await put.dump()
      expect(hits.map((h) => h.body)).toEqual(['once', 'streamed'])

      script = [503, 200]
      const bytes = await t.request('up', { method: 'PUT', path: '/x', idempotent: true, body: new TextEncoder().encode('bytes') })
      expect(bytes.status).toBe(200)
      await bytes.dump()
      expect(hits.map((h) => h.body)).toEqual(['once', 'streamed', 'bytes', 'bytes'])
    } finally {
      await t.close()
    }
  })

  it('opens the breaker of an upstream after 5xx answers and then fails fast with BreakerOpen', async () => {
    const t = new HttpTransport({ targets: { up: url }, retry: { tries: 1 }, breaker: { minCalls: 2, errorRatio: 0.5, cooldownMs: 60_000 } })
    try {
      script = [500, 500]
      for (let i = 0; i < 2; i++) await (await t.request('up', { method: 'POST', path: '/x', body: 'b' })).dump()
      const err = await t.request('up', { method: 'GET', path: '/x' }).catch((e: unknown) => e)
      expect(isRonError(err, 'BreakerOpen')).toBe(true)
      expect(hits).toHaveLength(2)
      expect(t.breaker(url)?.state).toBe('open')
    } finally {
      await t.close()
    }
  })

  it("regression: an error thrown by the caller's own upload body is rethrown as is and never opens the peer's breaker", async () => {
    const t = new HttpTransport({ targets: { up: url }, retry: { tries: 1 }, breaker: { minCalls: 2, errorRatio: 0.5, cooldownMs: 60_000 } })
    try {
      for (let i = 0; i < 5; i++) {
        const corrupt = async function* (): AsyncGenerator<Uint8Array> {
          yield new Uint8Array(1024)
          throw new IntegrityFailedError('local copy is corrupt', { details: { chunk: 1 } })
        }
        const err = await t.request('up', { method: 'PUT', path: '/o', body: corrupt() }).catch((e: unknown) => e)
        // Before the fix: NotReady "target is unreachable", counted by the breaker.
        expect(isRonError(err, 'IntegrityFailed')).toBe(true)
      }
      expect(t.breaker(url)?.state ?? 'closed').toBe('closed')
      const ok = await t.request('up', { method: 'GET', path: '/x' })
      expect(ok.status).toBe(200)
      await ok.dump()
    } finally {
      await t.close()
    }
  })

  it('resolves base URLs with a path prefix and URL targets used directly', async () => {
    const t = new HttpTransport({ targets: { prefixed: `${url}/api/` } })
    try {
      const res = await t.request('prefixed', { method: 'GET', path: '/v1/thing' })
      await res.dump()
      const direct = await t.request(url, { method: 'GET', path: 'plain' })
      await direct.dump()
      expect(hits.map((h) => h.path)).toEqual(['/api/v1/thing', '/plain'])
    } finally {
      await t.close()
      await t.close()
    }
  })
})
