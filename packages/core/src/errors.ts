/**
 * The RON error catalog (SPEC.md section 4). Every failure that crosses a package boundary or the
 * wire is a {@link RonError} subclass with a stable `code`, an HTTP `status` and a `retryable` flag.
 * Match errors by `code` (or `instanceof`), never by message.
 *
 * @module
 */

/** Stable error codes. The wire envelope's `error.code` is one of these. */
export const ErrorCodes = {
  Malformed: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  RequestTimeout: 408,
  Conflict: 409,
  ChainMismatch: 409,
  DuplicateApproval: 409,
  Gone: 410,
  OverLimit: 413,
  UnsupportedMediaType: 415,
  RangeNotSatisfiable: 416,
  InvalidSignature: 422,
  QuorumNotMet: 422,
  Revoked: 422,
  Expired: 422,
  IntegrityFailed: 422,
  InvalidReference: 422,
  Busy: 429,
  NotReady: 503,
  Draining: 503,
  Canceled: 503,
  BreakerOpen: 503,
  Brownout: 503,
  Unavailable: 503,
  Closed: 503,
  Timeout: 504,
  Internal: 500,
  NotImplemented: 501,
} as const satisfies Record<string, number>

/** One of the stable error codes of {@link ErrorCodes}. */
export type ErrorCode = keyof typeof ErrorCodes

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'RequestTimeout',
  'Busy',
  'NotReady',
  'Draining',
  'BreakerOpen',
  'Brownout',
  'Unavailable',
  'Timeout',
])

/** Options common to every {@link RonError}. */
export interface RonErrorOptions {
  /** Structured, JSON-safe details for the envelope's `details` (never secrets or stack traces). */
  details?: Record<string, unknown>
  /** The underlying cause, kept for logs; never sent on the wire. */
  cause?: unknown
  /** Suggested wait before retrying, in milliseconds; becomes `Retry-After` (rounded up to seconds). */
  retryAfterMs?: number
}

/** The wire shape of an error: `{"error":{...}}`. */
export interface ErrorEnvelope {
  error: {
    code: ErrorCode
    message: string
    retryable: boolean
    corr_id: string
    details: Record<string, unknown>
  }
}

/**
 * Brand carried by every {@link RonError}. `Symbol.for` makes it the same symbol in every copy of
 * `@ron/core` loaded into a process, so {@link isRonError} holds across copies (as undici's
 * `kUndiciError`).
 */
const kRonError = Symbol.for('@ron/core.error')

const NAMES = Object.fromEntries(Object.keys(ErrorCodes).map((c) => [c, `${c}Error`])) as Record<ErrorCode, string>

/**
 * Base class of every RON error. Carries a stable {@link ErrorCode}, the HTTP status it maps to,
 * whether a caller may retry, optional details and an optional `Retry-After` hint.
 *
 * Errors of a 4xx status are expected refusals, made to be answered: they capture no stack trace
 * (their `stack` is the `Name: message` line alone), which would cost several microseconds per
 * refused request. 5xx errors keep theirs; call `Error.captureStackTrace(err)` to give a 4xx one
 * a stack where it is wanted. {@link errorFromEnvelope} (the client side) captures one.
 *
 * @example
 * ```ts
 * try { await queue.trySend(job) } catch (e) {
 *   if (isRonError(e, 'Busy')) console.log('retry after', e.retryAfterMs)
 * }
 * ```
 */
export class RonError extends Error {
  /** Stable machine-readable code. */
  readonly code: ErrorCode
  /** HTTP status this error maps to. */
  readonly status: number
  /** Whether the same request may succeed if retried later. */
  readonly retryable: boolean
  /** Structured details sent in the envelope. */
  readonly details: Record<string, unknown>
  /** Suggested wait before retrying, in milliseconds. */
  readonly retryAfterMs: number | undefined
  /**
   * `x instanceof RonError` also holds for a RonError made by another copy of `@ron/core` (it
   * checks the brand); subclasses keep the ordinary prototype check.
   */
  static override [Symbol.hasInstance](v: unknown): boolean {
    if (this === RonError) return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[kRonError] === true
    return Function.prototype[Symbol.hasInstance].call(this, v)
  }

  constructor(code: ErrorCode, message: string, options: RonErrorOptions = {}) {
    const status = ErrorCodes[code]
    const cause = options.cause === undefined ? undefined : { cause: options.cause }
    if (status < 500) {
      const limit = Error.stackTraceLimit
      Error.stackTraceLimit = 0
      try {
        super(message, cause)
      } finally {
        Error.stackTraceLimit = limit
      }
    } else {
      super(message, cause)
    }
    this.name = NAMES[code]
    this.code = code
    this.status = status
    this.retryable = RETRYABLE.has(code)
    this.details = options.details ?? {}
    this.retryAfterMs = options.retryAfterMs
  }

  /** The wire envelope for this error. */
  toEnvelope(corrId: string): ErrorEnvelope {
    return {
      error: {
        code: this.code,
        message: this.message,
        retryable: this.retryable,
        corr_id: corrId,
        details: this.details,
      },
    }
  }
}

// The brand lives on the prototype (one property for every instance, not one defineProperty each).
Object.defineProperty(RonError.prototype, kRonError, { value: true })

/**
 * `JSON.stringify(err.toEnvelope(corrId))`, byte for byte, without building the envelope objects
 * (the reply path of every refused request). @internal
 */
export function envelopeJson(err: RonError, corrId: string): string {
  const details = JSON.stringify(err.details)
  if (details === undefined || !Object.hasOwn(ErrorCodes, err.code)) return JSON.stringify(err.toEnvelope(corrId))
  return `{"error":{"code":"${err.code}","message":${JSON.stringify(err.message)},"retryable":${err.retryable},"corr_id":${JSON.stringify(corrId)},"details":${details}}}`
}

function define<C extends ErrorCode>(code: C, defaultMessage: string) {
  return class extends RonError {
    declare readonly code: C
    constructor(message: string = defaultMessage, options?: RonErrorOptions) {
      super(code, message, options)
    }
  }
}

/** 400: bad JSON, bad address, bad field. `details.field` names the offending field when known. */
export class MalformedError extends define('Malformed', 'malformed request') {}
/** 401: missing or invalid token. `details.reason` says why. */
export class UnauthorizedError extends define('Unauthorized', 'missing or invalid token') {}
/** 403: the token lacks the scope or a caveat forbids the request. */
export class ForbiddenError extends define('Forbidden', 'forbidden') {}
/** 404: no such object or route. */
export class NotFoundError extends define('NotFound', 'not found') {}
/** 405: the route exists but not for this method. */
export class MethodNotAllowedError extends define('MethodNotAllowed', 'method not allowed') {}
/**
 * 408: the client was too slow: no body bytes within the gap timeout, under the minimum rate, or
 * past the whole-request deadline. (504 {@link TimeoutError} stays for the server's own deadlines.)
 */
export class RequestTimeoutError extends define('RequestTimeout', 'request timeout') {}
/** 409: the request conflicts with the current state. */
export class ConflictError extends define('Conflict', 'conflict') {}
/** 409: a proposal or append does not link the current head. */
export class ChainMismatchError extends define('ChainMismatch', 'chain mismatch') {}
/** 409: the signer already approved this proposal. */
export class DuplicateApprovalError extends define('DuplicateApproval', 'duplicate approval') {}
/**
 * 410: the resource existed and is gone for good (e.g. a registry version pruned by retention;
 * `details` names the covering checkpoint).
 */
export class GoneError extends define('Gone', 'gone') {}
/** 413: body or decompressed size over its cap. */
export class OverLimitError extends define('OverLimit', 'over limit') {}
/** 415: content type or encoding not accepted. */
export class UnsupportedMediaTypeError extends define('UnsupportedMediaType', 'unsupported media type') {}
/** 416: the requested range lies outside the object. */
export class RangeNotSatisfiableError extends define('RangeNotSatisfiable', 'range not satisfiable') {}
/** 422: a signature does not verify. */
export class InvalidSignatureError extends define('InvalidSignature', 'invalid signature') {}
/** 422: not enough approvals. */
export class QuorumNotMetError extends define('QuorumNotMet', 'quorum not met') {}
/** 422: the token or key was revoked. */
export class RevokedError extends define('Revoked', 'revoked') {}
/** 422: the token or key has expired. */
export class ExpiredError extends define('Expired', 'expired') {}
/** 422: content does not match its address or integrity data. */
export class IntegrityFailedError extends define('IntegrityFailed', 'integrity check failed') {}
/**
 * 422: a referenced object is missing or not of the expected kind (e.g. a name bound to something
 * that is not a manifest). `details.field` names the reference when known.
 */
export class InvalidReferenceError extends define('InvalidReference', 'invalid reference') {}
/** 429: a queue is full or a rate limit applies. Carries `retryAfterMs`. */
export class BusyError extends define('Busy', 'busy') {}
/** 503: a dependency is not ready. */
export class NotReadyError extends define('NotReady', 'not ready') {}
/** 503: the service is shutting down. */
export class DrainingError extends define('Draining', 'draining') {}
/** 503: the operation was canceled (signal aborted or shutdown). */
export class CanceledError extends define('Canceled', 'canceled') {}
/** 503: a circuit breaker is open. */
export class BreakerOpenError extends define('BreakerOpen', 'circuit breaker open') {}
/** 503: load shedding is active. */
export class BrownoutError extends define('Brownout', 'brownout') {}
/**
 * 503: something this request needs is unreachable: every peer of a lookup, a write quorum of
 * peers, etcd quorum. Faults of the local disk are {@link NotReadyError} instead (SPEC.md §4).
 */
export class UnavailableError extends define('Unavailable', 'unavailable') {}
/** 503: the resource was closed; calls after `close()` fail with this. */
export class ClosedError extends define('Closed', 'closed') {}
/** 504: a deadline was exceeded. `details.op` names the operation when known. */
export class TimeoutError extends define('Timeout', 'deadline exceeded') {}
/** 500: anything unexpected. The message sent on the wire never includes a stack trace. */
export class InternalError extends define('Internal', 'internal error') {}
/** 501: the request asks for something this server does not implement (e.g. an unsupported transfer coding). */
export class NotImplementedError extends define('NotImplemented', 'not implemented') {}

/**
 * True when `e` is a {@link RonError}, optionally of the given code. Recognises errors from any
 * copy of `@ron/core` in the process (by a `Symbol.for` brand, not `instanceof`).
 */
export function isRonError(e: unknown, code?: ErrorCode): e is RonError {
  if (typeof e !== 'object' || e === null || (e as Record<symbol, unknown>)[kRonError] !== true) return false
  return code === undefined || (e as RonError).code === code
}

/**
 * Normalises anything thrown into a {@link RonError}. RonErrors pass through; an `AbortError`
 * becomes {@link CanceledError} (or the signal's reason when that is a RonError); everything
 * else becomes {@link InternalError} with the original as `cause`.
 */
export function toRonError(e: unknown): RonError {
  if (e instanceof RonError) return e
  if (e instanceof Error && e.name === 'AbortError') {
    const reason: unknown = (e as { cause?: unknown }).cause
    if (reason instanceof RonError) return reason
    return new CanceledError('operation aborted', { cause: e })
  }
  return new InternalError('internal error', { cause: e })
}

/**
 * Rebuilds a typed error from a wire envelope (used by clients). Unknown codes become
 * {@link InternalError} with the original code in `details.code`.
 */
export function errorFromEnvelope(status: number, body: unknown, retryAfterMs?: number): RonError {
  const env = (body as Partial<ErrorEnvelope> | undefined)?.error
  const code = env?.code
  const message = typeof env?.message === 'string' ? env.message : `HTTP ${status}`
  const details = { ...(env?.details ?? {}), ...(env?.corr_id ? { corr_id: env.corr_id } : {}) }
  const opts: RonErrorOptions = retryAfterMs === undefined ? { details } : { details, retryAfterMs }
  let err: RonError
  if (typeof code === 'string' && code in ErrorCodes) err = errorForCode(code, message, opts)
  else {
    const fallback = (Object.entries(ErrorCodes).find(([, s]) => s === status)?.[0] ?? 'Internal') as ErrorCode
    err = errorForCode(fallback, message, { ...opts, details: { ...details, status } })
  }
  // A caller handed a 4xx error wants to know where its call was made: the client side keeps stacks.
  if (err.status < 500) Error.captureStackTrace(err, errorFromEnvelope)
  return err
}

const CLASSES: { [C in ErrorCode]: new (message?: string, options?: RonErrorOptions) => RonError } = {
  Malformed: MalformedError,
  Unauthorized: UnauthorizedError,
  Forbidden: ForbiddenError,
  NotFound: NotFoundError,
  MethodNotAllowed: MethodNotAllowedError,
  RequestTimeout: RequestTimeoutError,
  Conflict: ConflictError,
  ChainMismatch: ChainMismatchError,
  DuplicateApproval: DuplicateApprovalError,
  Gone: GoneError,
  OverLimit: OverLimitError,
  UnsupportedMediaType: UnsupportedMediaTypeError,
  RangeNotSatisfiable: RangeNotSatisfiableError,
  InvalidSignature: InvalidSignatureError,
  QuorumNotMet: QuorumNotMetError,
  Revoked: RevokedError,
  Expired: ExpiredError,
  IntegrityFailed: IntegrityFailedError,
  InvalidReference: InvalidReferenceError,
  Busy: BusyError,
  NotReady: NotReadyError,
  Draining: DrainingError,
  Canceled: CanceledError,
  BreakerOpen: BreakerOpenError,
  Brownout: BrownoutError,
  Unavailable: UnavailableError,
  Closed: ClosedError,
  Timeout: TimeoutError,
  Internal: InternalError,
  NotImplemented: NotImplementedError,
}

/** Constructs the typed subclass for `code` (for example {@link BusyError} for `'Busy'`). */
export function errorForCode(code: ErrorCode, message?: string, options?: RonErrorOptions): RonError {
  return new CLASSES[code](message, options)
}

/**
 * Codes of errors that report a mistake in how `@ron/core` is used: programmer and startup
 * errors (an invalid option, a bad route table, a channel missing from the topology). They are
 * thrown at construction or call time, never sent on the wire (a request that hits one answers
 * 500 `Internal`). Listed in `docs/errors.md`, as fastify lists its `FST_ERR_*` codes.
 */
export const UsageErrorCodes = {
  RON_INVALID_OPTION: 'an option or argument is out of range or of the wrong type',
  RON_ROUTE_CONFIG: 'a route table is invalid: a write route without scope or public, a duplicate, a bad pattern',
  RON_ROUTES_FROZEN: 'routes were added after the first request',
  RON_UNKNOWN_CHANNEL: 'a channel name is not in the topology, or names a channel of another kind',
  RON_INVALID_REPLY: 'a route handler returned a reply with an invalid status',
  RON_HASHER_FINISHED: 'a hasher was used after digest()',
  RON_RECV_PENDING: 'recv() was called while another recv() is pending on the same subscription',
  RON_CONCURRENCY_DOC: "a package's docs/CONCURRENCY.md does not match its topology",
  RON_SCHEDULE_DEADLOCK: 'testing: a scheduled model did not finish and nothing is left to schedule',
  RON_TIMER_LIMIT: 'testing: VirtualClock.runAll fired more timers than its limit',
} as const

/** One of the stable codes of {@link UsageErrorCodes}. */
export type UsageErrorCode = keyof typeof UsageErrorCodes

const kUsageError = Symbol.for('@ron/core.usage-error')

/**
 * A mistake in how `@ron/core` is used (see {@link UsageErrorCodes}). Match it by `code`.
 *
 * @example
 * ```ts
 * try { new BoundedQueue({ name: 'q', capacity: 0 }) } catch (e) {
 *   if (isRonUsageError(e, 'RON_INVALID_OPTION')) console.log(e.message)
 * }
 * ```
 */
export class RonUsageError extends Error {
  /** Stable code from {@link UsageErrorCodes}. */
  readonly code: UsageErrorCode

  constructor(code: UsageErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    Object.defineProperty(this, kUsageError, { value: true })
    this.name = 'RonUsageError'
    this.code = code
  }
}

/** True when `e` is a {@link RonUsageError} (from any copy of `@ron/core`), optionally of `code`. */
export function isRonUsageError(e: unknown, code?: UsageErrorCode): e is RonUsageError {
  if (typeof e !== 'object' || e === null || (e as Record<symbol, unknown>)[kUsageError] !== true) return false
  return code === undefined || (e as RonUsageError).code === code
}
