/**
 * One request/response exchange as the pipeline sees it: the outcome (status, headers, body) that
 * the node, memory and fetch writers turn into bytes, and the bookkeeping that must run exactly
 * once when the body is finished (admission release, work-pool slot, metrics).
 *
 * @module
 */

import { envelopeJson, toRonError, type RonError, RonUsageError } from '../errors.js'
import { closeIterable } from './iter.js'
import { asciiJsonText } from './json-text.js'
import type { Reply, ReplyBody, ReplyHeaders, RonRequest } from './types.js'

/** Statuses that never carry a body. */
export function isBodiless(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200)
}

/** Called once per finished exchange. @internal */
export type FinishHook = (ex: Exchange) => void

/** Mutable per-request state shared by the pipeline and the writers. @internal */
export class Exchange {
  status = 500
  /** Headers from the handler's reply, written as given (before the host's own). */
  replyHeaders: ReplyHeaders | undefined = undefined
  /**
   * The reply adopted by {@link setReply} (undefined after {@link setError}): the node writer
   * reuses what it worked out for a frozen reply it has written before.
   */
  reply: Reply | undefined = undefined
  /** Serialised or raw body. */
  body: ReplyBody = undefined
  /**
   * The body is a string known to be ASCII (the host's fast JSON path wrote it): its UTF-8 length
   * is its length, and the node writer sends it as latin1 without measuring it.
   */
  asciiBody = false
  /** `application/json` when the host serialised the body, else undefined. */
  contentType: string | undefined = undefined
  /** `Retry-After` seconds for 429/503 errors. */
  retryAfter: number | undefined = undefined
  /** `Allow` for 405. */
  allow: string | undefined = undefined
  /** CORS headers for a cross-origin request (node path), written before the reply's own. */
  cors: Record<string, string> | undefined = undefined
  /** Metric label: route name/path, `builtin` or `unmatched`. */
  label = 'unmatched'
  /** The matched route's bound metrics observer (`HttpHooks.observer`), when the host gives one. */
  observer: ((method: string, status: number, seconds: number) => void) | undefined = undefined
  /** The error this exchange answers with, when it failed. */
  error: RonError | undefined = undefined
  /** Admission release. */
  release: (() => void) | undefined = undefined
  /** Lets a queued job finish (frees its worker slot). */
  jobDone: (() => void) | undefined = undefined
  /** The route context, told when the exchange finishes (it releases a body share still held). */
  bodyOwner: { bodyDone(): void } | undefined = undefined
  private finished = false

  constructor(
    readonly req: RonRequest,
    readonly corrId: string,
    readonly startMs: number,
    private readonly onFinish: FinishHook,
  ) {}

  /** Adopts a handler's reply. @throws on a non-serialisable `json` or an invalid status. */
  setReply(reply: Reply): void {
    const status = reply.status
    if (!Number.isInteger(status) || status < 200 || status > 599) {
      closeIterable(reply.body)
      throw new RonUsageError('RON_INVALID_REPLY', `route handler returned an invalid status: ${String(status)}`)
    }
    if (reply.json !== undefined) {
      closeIterable(reply.body)
      const ascii = asciiJsonText(reply.json)
      this.asciiBody = ascii !== undefined
      this.body = ascii ?? JSON.stringify(reply.json)
      this.contentType = 'application/json'
    } else {
      this.asciiBody = false
      this.body = reply.body
    }
    this.status = status
    this.replyHeaders = reply.headers
    this.reply = reply
  }

  /** Turns `e` into the SPEC error envelope (dropping whatever reply was set). */
  setError(e: unknown): RonError {
    const err = toRonError(e)
    this.error = err
    this.status = err.status
    this.replyHeaders = undefined
    this.reply = undefined
    this.asciiBody = false
    this.body = envelopeJson(err, this.corrId)
    this.contentType = 'application/json'
    // SPEC.md 4: 429 and 503 always say when to come back; any other error that carries a hint
    // (a 504 from a slow dependency) passes it on too.
    if (err.retryAfterMs !== undefined || err.status === 429 || err.status === 503) {
      this.retryAfter = Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000))
    }
    if (err.code === 'MethodNotAllowed') {
      const allow = err.details.allow
      if (typeof allow === 'string') this.allow = allow
    }
    return err
  }

  /** Whether a body should be sent at all. */
  get suppressBody(): boolean {
    return this.req.method === 'HEAD' || isBodiless(this.status)
  }

  /** Runs the once-only completion: job slot, admission release, metrics. Never throws. */
  finish(): void {
    if (this.finished) return
    this.finished = true
    this.jobDone?.()
    this.bodyOwner?.bodyDone()
    try {
      this.release?.()
    } catch {
      // a broken release hook must not break the response path
    }
    this.onFinish(this)
  }
}
