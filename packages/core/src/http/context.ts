/**
 * The {@link RouteContext} handed to route handlers: params, query, auth, signal and the body
 * readers (`json`, `bytes`, `stream`) that apply the route's caps and strict validation.
 *
 * @module
 */

import { abortReason, linkSignals, onAbort, type LinkedSignal } from '../abort.js'
import type { Claims } from '../auth/types.js'
import { MalformedError, RonError, UnsupportedMediaTypeError } from '../errors.js'
import { decodedBody, headerString, readWholeBody, type BodyLimits, type BodyOwner } from './body.js'
import { BodyPace, type PaceLimits, type SlowBodyOwner } from './pace.js'
import type { BodyShares } from './shares.js'
import type { RonRequest, RouteContext } from './types.js'

/** Per-handler settings the context needs to read bodies (the pace and share are reloadable). @internal */
export interface ContextLimits {
  ratio: number
  maxDecoded: number
  readTimeoutMs: number
  clock: BodyLimits['clock']
  metrics: BodyLimits['metrics']
  /** Minimum rate and whole-request deadline of bodies. */
  pace: PaceLimits
  /** Lingering bodies per principal. */
  shares: BodyShares
}

/** Implementation of {@link RouteContext}. @internal */
export class Context implements RouteContext, BodyOwner, SlowBodyOwner {
  readonly req: RonRequest
  readonly params: Readonly<Record<string, string>>
  readonly corrId: string
  auth: Claims | undefined = undefined
  private sig: AbortSignal | undefined = undefined
  /** A queued job's worker signal: {@link Context.signal} links it with the request's on first read. */
  private worker: AbortSignal | undefined = undefined
  /** That link, once made; disposed by {@link Context.endJob}. */
  private link: LinkedSignal | undefined = undefined
  private readonly rawQuery: string
  private parsedQuery: URLSearchParams | undefined
  private consumed = false
  private principal: string | undefined = undefined
  /** The principal whose body share this request holds, until {@link bodyDone}. */
  private holding: string | undefined = undefined

  constructor(
    req: RonRequest,
    params: Readonly<Record<string, string>>,
    rawQuery: string,
    corrId: string,
    private readonly limit: number,
    private readonly limits: ContextLimits,
  ) {
    this.req = req
    this.params = params
    this.rawQuery = rawQuery
    this.corrId = corrId
  }

  /**
   * The request's signal, or the one set by {@link Context.setSignal}, or (a queued job) the
   * request's linked with the worker's, made on first read: a handler that never reads it costs
   * no controller and no listeners (hot path).
   */
  get signal(): AbortSignal {
    if (this.sig !== undefined) return this.sig
    if (this.worker === undefined) return this.req.signal
    this.link = linkSignals(this.worker, this.req.signal)
    return (this.sig = this.link.signal)
  }

  /**
   * {@link RouteContext.onAbort}: the request's own hook unless a signal was set; for a queued job
   * whose signal nobody read, that hook and a listener on the worker's signal (no link made).
   */
  onAbort(listener: (reason: Error) => void): () => void {
    if (this.sig === undefined && this.req.onAbort !== undefined) {
      const worker = this.worker
      if (worker === undefined) return this.req.onAbort(listener)
      let fired = false
      let offReq = NOOP
      let offWorker = NOOP
      const once = (reason: Error): void => {
        if (fired) return
        fired = true
        offReq()
        offWorker()
        listener(reason)
      }
      offWorker = onAbort(worker, () => once(abortReason(worker)))
      if (!fired) offReq = this.req.onAbort(once)
      if (fired) {
        offReq()
        offWorker()
      }
      return () => {
        offReq()
        offWorker()
      }
    }
    const signal = this.signal
    return onAbort(signal, () => listener(abortReason(signal)))
  }

  /** Replaces the signal (a queued job combines the request's with the worker's). */
  setSignal(signal: AbortSignal): void {
    this.sig = signal
  }

  /**
   * The handler runs as a queued job under `worker` (the pool's signal for it): from now on
   * {@link Context.signal} also follows it, linked only when read. @internal
   */
  startJob(worker: AbortSignal | undefined): void {
    this.worker = worker
  }

  /** The job ended: detaches the link {@link Context.signal} made (the signal stays as it is). @internal */
  endJob(): void {
    this.link?.dispose()
    this.link = undefined
    this.worker = undefined
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery))
  }

  setPrincipal(principal: string): void {
    if (this.consumed) throw new RonError('Internal', 'setPrincipal() must be called before the body is read')
    this.principal = principal
  }

  /** The principal of this request's body share: set by the route, else the token's subject, else the client's address. */
  private principalKey(): string {
    if (this.principal !== undefined) return this.principal
    const sub = this.auth?.sub
    return typeof sub === 'string' ? `sub:${sub}` : `ip:${this.req.remoteAddress}`
  }

  /**
   * The body has been read for one check period without ending: it takes one of its principal's
   * shares of lingering bodies (a body read at line speed never does), or is refused.
   * @returns {@link BusyError} `per_principal` when the principal already has its share
   */
  bodyLingers(): RonError | undefined {
    if (this.holding !== undefined) return undefined
    const key = this.principalKey()
    try {
      this.limits.shares.acquire(key)
    } catch (e) {
      return e as RonError
    }
    this.holding = key
    return undefined
  }

  /** Releases the body share (idempotent): the body is read, failed or abandoned, or the exchange finished. */
  bodyDone(): void {
    const key = this.holding
    if (key === undefined) return
    this.holding = undefined
    this.limits.shares.release(key)
  }

  /** The body limits of one read: the route's cap, the host's caps, and a fresh pace. */
  private bodyLimits(): Omit<BodyLimits, 'signal'> {
    const l = this.limits
    return {
      limit: this.limit,
      ratio: l.ratio,
      maxDecoded: l.maxDecoded,
      readTimeoutMs: l.readTimeoutMs,
      clock: l.clock,
      metrics: l.metrics,
      pace: new BodyPace(l.pace, expectedBytes(this.req, this.limit), l.clock, l.metrics, this),
      owner: this,
    }
  }

  stream(): AsyncIterable<Uint8Array> {
    if (this.consumed) throw new RonError('Internal', 'request body already consumed')
    this.consumed = true
    try {
      return decodedBody(this.req, { ...this.bodyLimits(), signal: this.signal })
    } catch (e) {
      this.bodyDone()
      throw e
    }
  }

  async bytes(): Promise<Uint8Array> {
    if (this.consumed) throw new RonError('Internal', 'request body already consumed')
    this.consumed = true
    try {
      return await readWholeBody(this.req, this.bodyLimits(), () => this.signal, this.sig ?? this.worker)
    } finally {
      this.bodyDone()
    }
  }

  async json<T>(schema: { parse(value: unknown): T }): Promise<T> {
    // SPEC 4: a JSON route takes JSON. A body without a JSON Content-Type is refused before it is
    // read when its headers announce it, after reading when only its bytes do (an in-process
    // stream). A request without a body is not checked (its handler sees an empty body).
    const ct = headerString(this.req.headers['content-type'])
    const jsonType = ct !== undefined && isJsonContentType(ct)
    if (!jsonType && announcesBody(this.req)) throw unsupportedType(ct)
    const buf = await this.bytes()
    if (!jsonType && buf.byteLength > 0) throw unsupportedType(ct)
    let value: unknown
    try {
      value = JSON.parse(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8'))
    } catch (e) {
      throw new MalformedError(buf.byteLength === 0 ? 'request body is empty, expected JSON' : 'request body is not valid JSON', {
        details: { reason: e instanceof Error ? e.message : 'parse error' },
        cause: e,
      })
    }
    try {
      return schema.parse(value)
    } catch (e) {
      throw schemaError(e)
    }
  }
}

const NOOP = (): void => {}

function unsupportedType(ct: string | undefined): UnsupportedMediaTypeError {
  return ct === undefined
    ? new UnsupportedMediaTypeError('a JSON body needs content-type: application/json, got none', { details: { contentType: null } })
    : new UnsupportedMediaTypeError(`content-type must be application/json, got '${ct}'`, { details: { contentType: ct } })
}

/** Whether the headers announce a body (RFC 9112 6.3: `Transfer-Encoding`, or a non-zero `Content-Length`). */
function announcesBody(req: RonRequest): boolean {
  const h = req.headers
  if (h['transfer-encoding'] !== undefined) return true
  const len = h['content-length']
  return len !== undefined && len !== '0'
}

/** What the body may amount to, for its deadline: its `Content-Length`, else the route's cap (undefined when unbounded). */
function expectedBytes(req: RonRequest, limit: number): number | undefined {
  const declared = headerString(req.headers['content-length'])
  if (declared !== undefined) {
    const n = Number(declared)
    if (Number.isFinite(n) && n >= 0) return n
  }
  return Number.isFinite(limit) ? limit : undefined
}

function isJsonContentType(ct: string): boolean {
  const semi = ct.indexOf(';')
  const mime = (semi === -1 ? ct : ct.slice(0, semi)).trim().toLowerCase()
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'))
}

interface SchemaIssue {
  code?: string
  path?: readonly PropertyKey[]
  message?: string
  keys?: readonly string[]
}

/**
 * Turns a schema failure into a {@link MalformedError} naming the first offending field. Works
 * with zod (any error carrying an `issues` array); RonErrors pass through.
 * @internal
 */
export function schemaError(e: unknown): RonError {
  if (e instanceof RonError) return e
  const issues = (e as { issues?: unknown } | undefined)?.issues
  if (Array.isArray(issues) && issues.length > 0) {
    const issue = issues[0] as SchemaIssue
    const path = (issue.path ?? []).map((p) => String(p))
    if (issue.code === 'unrecognized_keys' && issue.keys !== undefined && issue.keys.length > 0) {
      const field = [...path, issue.keys[0]!].join('.')
      return new MalformedError(`unknown field '${field}'`, { details: { field, issue: issue.code }, cause: e })
    }
    const field = path.length > 0 ? path.join('.') : '(root)'
    const msg = issue.message ?? 'invalid value'
    return new MalformedError(`field '${field}': ${msg}`, { details: { field, issue: issue.code ?? 'invalid' }, cause: e })
  }
  return new MalformedError(e instanceof Error ? `invalid request body: ${e.message}` : 'invalid request body', { cause: e })
}
