import { MemoryTransport, addressOf, generateIssuerKey, newNodeId, nodeIdentityFromKey, splitRuntime, staticNodeDirectory } from '@ron/core'
import type { Address, Clock, DispatchTarget, KnownNode, Manifest, NodeDirectory, NodeIdentity, RonRequest, RonResponse, TransportResponse } from '@ron/core'
import { createTestIssuer, type TestIssuer } from '@ron/core/testing'
import { INDEX_RUNTIME_KEYS, createIndexClient, createIndexService, signNameRecord } from '../src/index.js'
import type { IndexClient, IndexRuntime, IndexService, IndexServiceOptions, SignedNameRecord } from '../src/index.js'

/** A node of a test: its identity (to sign with) and how a directory knows it. */
export interface TestNode {
  identity: NodeIdentity
  known: KnownNode
}

/** A fresh node with a fresh key, advertising `services`. */
export function testNode(services: Record<string, string> = {}, admin?: string): TestNode {
  const identity = nodeIdentityFromKey(newNodeId(), generateIssuerKey())
  return { identity, known: { id: identity.id, nodeKey: identity.publicKey, services, ...(admin === undefined ? {} : { admin }) } }
}

/** A directory of `self` first, then `others`. */
export function directory(self: TestNode, ...others: TestNode[]): NodeDirectory {
  return staticNodeDirectory([self.known, ...others.map((o) => o.known)])
}

/** A record `home` signs for `name`. */
export function signed(home: TestNode, name: string, manifestAddress: Address | null, seq = 1, signedAt = 1_000): SignedNameRecord {
  return signNameRecord(home.identity, { name, manifestAddress, seq, node: home.identity.id, signedAt })
}

/** A peer's answer for a name, with the manifest's text and (unless `record: null`) the record `home` signed. */
export function nameAnswer(name: string, manifest: Manifest, o: { home?: TestNode; record?: unknown; seq?: number; providers?: unknown[] } = {}): unknown {
  const text = JSON.stringify(manifest)
  const manifestAddress = addressOf(new TextEncoder().encode(text))
  const record = o.record !== undefined ? o.record : o.home === undefined ? undefined : signed(o.home, name, manifestAddress, o.seq ?? 1)
  return { key: name, manifestAddress, manifest, manifestText: text, ...(record === null || record === undefined ? {} : { record }), providers: o.providers ?? [], source: 'local', ttlSec: 10 }
}

/** A tombstone a store test writes (stores do not verify records). */
export function tomb(name: string, seq = 1): SignedNameRecord {
  return { name, manifestAddress: null, seq, node: 'n0000000000000001', signedAt: 1, sig: 'x'.repeat(86) }
}

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
  /** A client whose token is `node`'s own (`sub: node:<node>`, scope index:announce). */
  announcer(node: string): IndexClient
  tokens: { write: string; announce: string; storage: string }
  /** Stores `manifest` (or raw bytes) in storage and returns its address. */
  put(value: Manifest | string | Uint8Array): Promise<Address>
  request(method: string, path: string, headers?: Record<string, string>, body?: string): Promise<TransportResponse>
  close(): Promise<void>
}

/** An index on a MemoryTransport with a fake storage; runtime keys in `config` go to the runtime argument. */
export async function setup(config: IndexServiceOptions = {}, opts: { clock?: Clock; transport?: MemoryTransport } = {}): Promise<Env> {
  const transport = opts.transport ?? new MemoryTransport(opts.clock === undefined ? {} : { clock: opts.clock })
  const issuer = createTestIssuer(opts.clock === undefined ? {} : { clock: opts.clock })
  const storage = new FakeStorage()
  transport.mount('storage', storage)
  const { data, runtime } = splitRuntime<IndexRuntime>(config, {}, INDEX_RUNTIME_KEYS)
  const index = await createIndexService({ amnesia: true, ...data }, transport, { auth: { keys: issuer.keys }, ...(opts.clock === undefined ? {} : { clock: opts.clock }), ...runtime })
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
    announcer: (node) => createIndexClient(transport, { token: issuer.mint({ sub: `node:${node}`, scope: 'index:announce', aud: 'index' }) }),
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
export type PeerReply = { status: 200; json: unknown } | { status: 404; json?: unknown } | { status: 503 } | { status: 500 } | { hang: true }

/**
 * A stand-in peer index: answers `GET /resolve/:key` after `delayMs` of (virtual) time, and records
 * how each request ended, so tests can check that losers were actually aborted.
 */
export class FakePeer implements DispatchTarget {
  readonly calls: string[] = []
  readonly urls: string[] = []
  /** The headers of each request, as received. */
  readonly headers: Array<Readonly<Record<string, string | string[] | undefined>>> = []
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
    this.headers.push(req.headers)
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
