/**
 * The same `GET /hello` three ways: calling the handler's `dispatch` directly (the baseline: no
 * transport at all), through `MemoryTransport` (in-process, what tests and single-process hosts
 * use), and through `HttpTransport` over loopback (undici pool to a `serve()`d handler). Each op
 * is one request whose JSON body is read; the ratios show what each transport layer costs.
 *
 * Run: `npx tsx bench/run.ts transport`
 */
import { HttpTransport, MemoryTransport, createHttpHandler, serve, type RonRequest } from '@ron/core'
import { compare, report } from '../lib/harness.js'

const EMPTY: AsyncIterable<Uint8Array> = { [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }) }

async function readJson(body: AsyncIterable<Uint8Array>): Promise<unknown> {
  const chunks: Uint8Array[] = []
  for await (const c of body) chunks.push(c)
  return JSON.parse(Buffer.concat(chunks).toString()) as unknown
}

export async function run(): Promise<void> {
  const handler = createHttpHandler({
    serviceId: 'bench',
    routes: [{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }],
  })
  const memory = new MemoryTransport()
  memory.mount('bench', handler)
  const server = await serve(handler, { port: 0 })
  const httpT = new HttpTransport({ targets: { bench: server.url }, breaker: false })
  const signal = new AbortController().signal

  try {
    const rows = await compare(
      {
        name: 'dispatch() directly',
        fn: async () => {
          const req: RonRequest = { method: 'GET', url: '/hello', headers: {}, body: EMPTY, remoteAddress: '127.0.0.1', signal }
          const res = await handler.dispatch(req)
          await readJson(res.body)
        },
      },
      [
        {
          // What any real caller pays: a per-request signal (the HTTP path creates one too).
          name: 'dispatch() + fresh AbortController',
          fn: async () => {
            const ac = new AbortController()
            const req: RonRequest = { method: 'GET', url: '/hello', headers: {}, body: EMPTY, remoteAddress: '127.0.0.1', signal: ac.signal }
            const res = await handler.dispatch(req)
            await readJson(res.body)
          },
        },
        {
          name: 'MemoryTransport.request',
          fn: async () => {
            const res = await memory.request('bench', { method: 'GET', path: '/hello' })
            await res.json()
          },
        },
        {
          name: 'HttpTransport.request (loopback, serial)',
          fn: async () => {
            const res = await httpT.request('bench', { method: 'GET', path: '/hello' })
            await res.json()
          },
        },
      ],
      { ops: 2000, rounds: 5 },
    )
    report('GET /hello: transport overhead (one request at a time)', rows, 'req/s')

    // Concurrency: 32 requests in flight per op, the way a service fans out.
    const batch = (fn: () => Promise<unknown>) => () => Promise.all(Array.from({ length: 32 }, fn))
    const rows32 = await compare(
      {
        name: 'dispatch() directly x32',
        fn: batch(async () => {
          const res = await handler.dispatch({ method: 'GET', url: '/hello', headers: {}, body: EMPTY, remoteAddress: '127.0.0.1', signal })
          return readJson(res.body)
        }),
      },
      [
        { name: 'MemoryTransport x32', fn: batch(async () => (await memory.request('bench', { method: 'GET', path: '/hello' })).json()) },
        { name: 'HttpTransport x32 (loopback)', fn: batch(async () => (await httpT.request('bench', { method: 'GET', path: '/hello' })).json()) },
      ],
      { ops: 100, rounds: 5 },
    )
    report('GET /hello: 32 concurrent requests per op', rows32, 'batches/s')
  } finally {
    await httpT.close()
    await memory.close()
    await server.close()
  }
}
