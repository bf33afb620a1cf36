import { ForbiddenError, MemoryTransport, collectBytes, createHttpHandler, systemClock, type Clock, type DispatchTarget, type HttpHandler, type RonRequest, type RonResponse, type TransportResponse } from '@ron/core'
import { VirtualClock, createTestIssuer, seededRandom, type TestIssuer } from '@ron/core/testing'
import { createStorageService, type StorageService } from '@ron/storage'
import { z } from 'zod'
import { createInteropService, hashApiKey, toServiceTokens, type InteropConfigInput, type InteropRuntime, type InteropService } from '../src/index.js'

/** Start of virtual time: a realistic Unix ms value, so webhook timestamps look real. */
export const T0 = 1_750_000_000_000

export const SECRETS = {
  github: 'gh-secret',
  slack: 'slack-signing-secret',
  stripe: 'whsec_stripe_secret',
  standard: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
} as const

export const API_KEY = 'ronk_test_key_0123456789abcdef'

/**
 * A passport stand-in on the transport: `POST /v1/passport/attenuate` verifies the parent token in
 * the body and mints a narrower child with the test issuer (the shape of passport's DTO: `{token,
 * aud?, scope?, ttlSec?, caveats?}` → `{token, jti, kid, exp}`), refusing anything wider than the
 * parent (403 `widen`). It has no issue route: interop never issues (SPEC §5). Each request is
 * logged without its token, with the parent's `sub` as `parentSub`.
 */
export function passportDouble(issuer: TestIssuer, log: unknown[] = [], clock: Clock = systemClock): HttpHandler {
  const verifier = issuer.verifier()
  const dto = z.strictObject({
    token: z.string(),
    aud: z.array(z.string()).optional(),
    scope: z.array(z.string()).optional(),
    ttlSec: z.number().optional(),
    caveats: z.strictObject({ maxBytes: z.number() }).optional(),
  })
  const widen = (field: string): ForbiddenError => new ForbiddenError(`${field} is wider than the parent`, { details: { reason: 'widen', field } })
  const h = createHttpHandler({
    serviceId: 'passport',
    routes: [
      {
        method: 'POST',
        path: '/v1/passport/attenuate',
        public: true,
        handler: async (ctx) => {
          const { token: parentToken, ...req } = await ctx.json(dto)
          const parent = await verifier.verify(parentToken, { audience: 'passport', anyAudience: true } as { audience: string })
          const aud = req.aud ?? parent.aud
          const scope = req.scope ?? parent.scope
          if (!aud.every((a) => parent.aud.includes(a))) throw widen('aud')
          if (!scope.every((x) => parent.scope.includes(x))) throw widen('scope')
          const nowSec = Math.floor(clock.now() / 1000)
          const exp = req.ttlSec === undefined ? parent.exp : nowSec + req.ttlSec
          if (exp > parent.exp) throw widen('ttlSec')
          const maxBytes = req.caveats?.maxBytes ?? parent.ron?.maxBytes
          if (maxBytes !== undefined && parent.ron?.maxBytes !== undefined && maxBytes > parent.ron.maxBytes) throw widen('caveats.maxBytes')
          log.push({ ...req, parentSub: parent.sub })
          const jti = `jti-${log.length}-abcdef`
          const token = issuer.mint({ sub: parent.sub, aud, scope, ttlSec: exp - nowSec, jti, prf: parent.jti, ...(maxBytes === undefined ? {} : { ron: { maxBytes } }) })
          return { status: 200, json: { token, jti, kid: issuer.key.kid, exp } }
        },
      },
    ],
  })
  return h
}

/** An index stand-in: every `b3:` address resolves to the storage target (the shape of index's resolve answer). */
export function indexDouble(calls: string[] = [], corrIds: string[] = []): DispatchTarget {
  const h = createHttpHandler({
    serviceId: 'index',
    routes: [
      {
        method: 'GET',
        path: '/resolve/:key',
        handler: (ctx) => {
          calls.push(ctx.params.key ?? '')
          corrIds.push(String(ctx.req.headers['x-corr-id']))
          return { status: 200, json: { key: ctx.params.key, providers: [{ node: 'n1', endpoint: 'storage', score: 1 }], source: 'local', ttlSec: 10 } }
        },
      },
    ],
  })
  return { dispatch: (r: RonRequest): Promise<RonResponse> => h.dispatch(r) }
}

/** A storage wrapper whose PUTs wait for a gate (slow storage), while GETs pass straight through. */
export class SlowStorage implements DispatchTarget {
  #gate: Promise<void> | undefined
  #open: (() => void) | undefined
  putsWaiting = 0
  /** While true, every PUT answers 500 Internal (an upstream 5xx burst). */
  failPuts = false
  /** While true, every GET answers 500 Internal. */
  failGets = false
  /** While set, every PUT answers this status with an `Unauthorized` (401) or `Forbidden` (403) envelope. */
  refusePuts: 401 | 403 | undefined
  /** Sizes of the body chunks of the last PUT, as storage received them. */
  putChunks: number[] = []
  /** `X-Corr-ID` of every GET or HEAD storage received. */
  readCorrIds: string[] = []
  constructor(readonly inner: DispatchTarget) {}
  stall(): void {
    this.#gate ??= new Promise<void>((r) => (this.#open = r))
  }
  release(): void {
    this.#open?.()
    this.#gate = undefined
    this.#open = undefined
  }
  async dispatch(req: RonRequest): Promise<RonResponse> {
    if (req.method === 'PUT' && this.#gate !== undefined) {
      this.putsWaiting++
      const aborted = new Promise<void>((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason as Error), { once: true }))
      try {
        await Promise.race([this.#gate, aborted])
      } finally {
        this.putsWaiting--
      }
    }
    if (req.method === 'GET' || req.method === 'HEAD') this.readCorrIds.push(String(req.headers['x-corr-id']))
    if (req.method === 'GET' && this.failGets) return errorAnswer(500, 'Internal')
    if (req.method !== 'PUT') return this.inner.dispatch(req)
    if (this.failPuts) return errorAnswer(500, 'Internal')
    if (this.refusePuts !== undefined) return errorAnswer(this.refusePuts, this.refusePuts === 401 ? 'Unauthorized' : 'Forbidden')
    const chunks: number[] = []
    this.putChunks = chunks
    const body = req.body
    async function* recorded(): AsyncGenerator<Uint8Array> {
      for await (const c of body) {
        chunks.push(c.byteLength)
        yield c
      }
    }
    return this.inner.dispatch({ ...req, body: recorded() })
  }
}

function errorAnswer(status: number, code: string): RonResponse {
  const body = new TextEncoder().encode(JSON.stringify({ error: { code, message: 'boom', retryable: false, corr_id: 'x', details: {} } }))
  return { status, headers: { 'content-type': 'application/json' }, body: (async function* () { yield body })() }
}

export interface System {
  clock: VirtualClock
  transport: MemoryTransport
  issuer: TestIssuer
  storage: StorageService
  slow: SlowStorage
  interop: InteropService
  issued: unknown[]
  resolves: string[]
  /** X-Corr-ID of each resolve call index received. */
  resolveCorrIds: string[]
  request(method: string, path: string, headers?: Record<string, string>, body?: Uint8Array | string | AsyncIterable<Uint8Array>): Promise<TransportResponse>
  close(): Promise<void>
}

/** Storage (real, in memory), a passport double and interop on one MemoryTransport with a VirtualClock. */
export async function system(config: InteropConfigInput = {}, opts: { withPassport?: boolean; runtime?: InteropRuntime } = {}): Promise<System> {
  const clock = new VirtualClock(T0)
  const transport = new MemoryTransport({ clock, timeoutMs: 60_000 })
  const issuer = createTestIssuer({ clock })
  const storage = await createStorageService({ auth: { keys: issuer.keys }, clock, random: seededRandom(1) })
  const slow = new SlowStorage(storage)
  transport.mount('storage', slow)
  const issued: unknown[] = []
  if (opts.withPassport !== false) transport.mount('passport', passportDouble(issuer, issued, clock))
  const resolves: string[] = []
  const resolveCorrIds: string[] = []
  transport.mount('index', indexDouble(resolves, resolveCorrIds))
  // A node's service token: storage:write with a maxBytes caveat (SPEC §5 service-call scopes).
  const serviceToken = issuer.mint({ sub: 'node:test', scope: ['storage:write'], aud: ['storage'], ttlSec: 86_400 * 30, ron: { maxBytes: 1 << 30 } })
  const interop = await createInteropService(
    {
      webhooks: { providers: { github: { secrets: [SECRETS.github] }, slack: { secrets: [SECRETS.slack] }, stripe: { secrets: [SECRETS.stripe] }, standard: { secrets: [SECRETS.standard] } } },
      apiKeys: [{ client: 'alice', keyHash: hashApiKey(API_KEY) }],
      ...config,
    },
    transport,
    { clock, random: seededRandom(2), tokens: toServiceTokens(serviceToken), auth: { keys: issuer.keys }, ...opts.runtime },
  )
  transport.mount('interop', interop)
  return {
    clock,
    transport,
    issuer,
    storage,
    slow,
    interop,
    issued,
    resolves,
    resolveCorrIds,
    request(method, path, headers = {}, body) {
      return transport.request('interop', { method, path, headers, ...(body === undefined ? {} : { body }) })
    },
    async close() {
      slow.release()
      await closeOnVirtualTime(clock, interop.close())
      await closeOnVirtualTime(clock, storage.close())
      await transport.close()
    },
  }
}

export const readJson = async <T = Record<string, unknown>>(res: TransportResponse): Promise<T> => JSON.parse(new TextDecoder().decode(await collectBytes(res.body))) as T

/**
 * Waits for a `close()` that may wait on virtual time (drain deadlines, task backoffs), moving the
 * clock forward in small steps until it settles.
 */
export async function closeOnVirtualTime(clock: VirtualClock, closing: Promise<void>): Promise<void> {
  let done = false
  const watched = closing.finally(() => {
    done = true
  })
  for (let i = 0; i < 200 && !done; i++) await clock.advance(50)
  await watched
}
