import { MemoryTransport, addressOf } from '@ron/core'
import type { Address, Clock, DispatchTarget, Manifest, RonRequest, RonResponse, TransportResponse } from '@ron/core'
import { createTestIssuer, type TestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '../src/index.js'
import type { IndexClient, IndexConfig, IndexService } from '../src/index.js'

/** A deterministic `b3:` address for test content `n`. */
export function addr(n: number | string): Address {
  return addressOf(new TextEncoder().encode(`content-${n}`))
}

export interface Env {
  transport: MemoryTransport
  issuer: TestIssuer
  storage: FakeStorage
  index: IndexService
  /** index:write + index:announce */
  client: IndexClient
  anon: IndexClient
  tokens: { write: string; announce: string; storage: string }
  /** Stores `manifest` (or raw bytes) in storage and returns its address. */
  put(value: Manifest | string | Uint8Array): Promise<Address>
  request(method: string, path: string, headers?: Record<string, string>, body?: string): Promise<TransportResponse>
  close(): Promise<void>
}

export async function setup(config: IndexConfig = {}, opts: { clock?: Clock; transport?: MemoryTransport } = {}): Promise<Env> {
  const transport = opts.transport ?? new MemoryTransport(opts.clock === undefined ? {} : { clock: opts.clock })
  const issuer = createTestIssuer(opts.clock === undefined ? {} : { clock: opts.clock })
  const storage = new FakeStorage()
  transport.mount('storage', storage)
  const index = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, ...(opts.clock === undefined ? {} : { clock: opts.clock }), ...config }, transport)
  transport.mount('index', index)
  const tokens = {
    write: issuer.mint({ scope: 'index:write', aud: 'index' }),
    announce: issuer.mint({ scope: 'index:announce', aud: 'index' }),
    storage: issuer.mint({ scope: 'storage:write', aud: 'storage' }),
  }
  return {
    transport,
    issuer,
    storage,
    index,
    tokens,
    client: createIndexClient(transport, { token: issuer.mint({ scope: ['index:write', 'index:announce'], aud: 'index' }) }),
    anon: createIndexClient(transport),
    put(value) {
      const body = typeof value === 'string' || value instanceof Uint8Array ? value : JSON.stringify(value)
      return Promise.resolve(storage.put(body))
    },
    request(method, path, headers = {}, body) {
      return transport.request('index', { method, path, headers, ...(body === undefined ? {} : { body }) })
    },
    async close() {
      await index.close()
      await transport.close()
    },
  }
}

export function manifestFor(n: number | string, size = 10): Manifest {
  return { content: addr(n), size, type: 'text/plain' }
}

/** Behaviour of a {@link FakePeer} for one key. */
export type PeerReply = { status: 200; json: unknown } | { status: 404 } | { status: 503 } | { status: 500 } | { hang: true }

/**
 * A stand-in peer index: answers `GET /resolve/:key` after `delayMs` of (virtual) time, and records
 * how each request ended, so tests can check that losers were actually aborted.
 */
export class FakePeer implements DispatchTarget {
  readonly calls: string[] = []
  readonly urls: string[] = []
  aborted = 0
  answered = 0
  delayMs = 0
  reply: (key: string) => PeerReply = () => ({ status: 404 })
  readonly #clock: Clock

  constructor(clock: Clock) {
    this.#clock = clock
  }

  async dispatch(req: RonRequest): Promise<RonResponse> {
    const key = decodeURIComponent(req.url.replace(/^\/resolve\//, '').split('?')[0] ?? '')
    this.calls.push(key)
    this.urls.push(req.url)
    const r = this.reply(key)
    try {
      if ('hang' in r) await this.#clock.sleep(1e9, req.signal)
      else if (this.delayMs > 0) await this.#clock.sleep(this.delayMs, req.signal)
    } catch (e) {
      this.aborted++
      throw e
    }
    this.answered++
    const status = 'status' in r ? r.status : 500
    const code = status === 404 ? 'NotFound' : status === 503 ? 'NotReady' : 'Internal'
    const json = 'json' in r ? r.json : { error: { code, message: 'x', retryable: status === 503, corr_id: 'x', details: {} } }
    const bytes = new TextEncoder().encode(JSON.stringify(json))
    return {
      status,
      headers: { 'content-type': 'application/json' },
      body: (async function* () {
        yield bytes
      })(),
    }
  }
}

/** A peer answer for an address. */
export function addressAnswer(address: Address, nodes: string[]): unknown {
  return { key: address, providers: nodes.map((node) => ({ node, endpoint: `http://${node}:7701`, score: 1 })), source: 'local', ttlSec: 10 }
}

/** Attaches handlers at once (no unhandled rejection while virtual time moves) and exposes the outcome. */
export function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  )
}

/**
 * A stand-in for storage's read path (`GET /o/:addr`), so these tests do not depend on the storage
 * package; the end-to-end announcement test uses the real storage service.
 */
export class FakeStorage implements DispatchTarget {
  readonly objects = new Map<string, Uint8Array>()
  reads = 0
  /** When set, bodies send their first byte and then stall until the request is aborted. */
  stall: Clock | undefined

  put(body: string | Uint8Array): Address {
    const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
    const a = addressOf(bytes)
    this.objects.set(a, bytes)
    return a
  }

  dispatch(req: RonRequest): Promise<RonResponse> {
    this.reads++
    const a = req.url.replace(/^\/o\//, '')
    const bytes = req.method === 'GET' ? this.objects.get(a) : undefined
    const status = bytes === undefined ? 404 : 200
    const body = bytes ?? new TextEncoder().encode(JSON.stringify({ error: { code: 'NotFound', message: 'no', retryable: false, corr_id: 'x', details: {} } }))
    const stall = this.stall
    return Promise.resolve({
      status,
      headers: { 'content-type': status === 200 ? 'application/octet-stream' : 'application/json', 'content-length': String(body.byteLength) },
      body: (async function* () {
        if (stall !== undefined && status === 200) {
          yield body.subarray(0, 1)
          await stall.sleep(1e9, req.signal)
          yield body.subarray(1)
        } else yield body
      })(),
    })
  }
}
