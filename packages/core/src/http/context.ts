/**
 * The {@link RouteContext} handed to route handlers: params, query, auth, signal and the body
 * readers (`json`, `bytes`, `stream`) that apply the route's caps and strict validation.
 *
 * @module
 */

import type { Claims } from '../auth/types.js'
import { MalformedError, RonError, UnsupportedMediaTypeError } from '../errors.js'
import { decodedBody, headerString, readWholeBody, type BodyLimits } from './body.js'
import type { RonRequest, RouteContext } from './types.js'

/** Per-handler constants the context needs to read bodies. @internal */
export interface ContextLimits {
  ratio: number
  maxDecoded: number
  readTimeoutMs: number
  clock: BodyLimits['clock']
  metrics: BodyLimits['metrics']
}

/** Implementation of {@link RouteContext}. @internal */
export class Context implements RouteContext {
  readonly req: RonRequest
  readonly params: Readonly<Record<string, string>>
  readonly corrId: string
  auth: Claims | undefined = undefined
  private sig: AbortSignal | undefined = undefined
  private readonly rawQuery: string
  private parsedQuery: URLSearchParams | undefined
  private consumed = false

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

  /** The request's signal, or the one set by {@link Context.setSignal}; resolved lazily (hot path). */
  get signal(): AbortSignal {
    return this.sig ?? this.req.signal
  }

  /** Replaces the signal (a queued job combines the request's with the worker's). */
  setSignal(signal: AbortSignal): void {
    this.sig = signal
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery))
  }

  stream(): AsyncIterable<Uint8Array> {
    if (this.consumed) throw new RonError('Internal', 'request body already consumed')
    this.consumed = true
    const l = this.limits
    return decodedBody(this.req, {
      limit: this.limit,
      ratio: l.ratio,
      maxDecoded: l.maxDecoded,
      readTimeoutMs: l.readTimeoutMs,
      clock: l.clock,
      signal: this.signal,
      metrics: l.metrics,
    })
  }

  async bytes(): Promise<Uint8Array> {
    if (this.consumed) throw new RonError('Internal', 'request body already consumed')
    this.consumed = true
    const l = this.limits
    const limits = { limit: this.limit, ratio: l.ratio, maxDecoded: l.maxDecoded, readTimeoutMs: l.readTimeoutMs, clock: l.clock, metrics: l.metrics }
    return readWholeBody(this.req, limits, () => this.signal, this.sig)
  }

  async json<T>(schema: { parse(value: unknown): T }): Promise<T> {
    const ct = headerString(this.req.headers['content-type'])
    if (ct !== undefined && !isJsonContentType(ct)) {
      throw new UnsupportedMediaTypeError(`content-type must be application/json, got '${ct}'`, {
        details: { contentType: ct },
      })
    }
    const buf = await this.bytes()
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
