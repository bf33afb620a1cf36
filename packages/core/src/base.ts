/**
 * `@ron/core/base`: the bottom layer every other room of `@ron/core` builds on — the typed errors
 * (SPEC.md section 4), injectable time and randomness, abort helpers, bytes, canonical JSON
 * (RFC 8785), disk faults, the heap tuning knob and the metrics sink interface. It loads no
 * zod, no prom-client and no network code. Every name here is the same object `@ron/core`
 * exports.
 *
 * @example
 * ```ts
 * import { isRonError, systemClock } from '@ron/core/base'
 *
 * await systemClock.sleep(10)
 * ```
 *
 * @module @ron/core/base
 */

// Errors (SPEC.md section 4) and usage errors.
export {
  ErrorCodes,
  RonError,
  MalformedError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  RequestTimeoutError,
  ConflictError,
  ChainMismatchError,
  DuplicateApprovalError,
  GoneError,
  OverLimitError,
  UnsupportedMediaTypeError,
  RangeNotSatisfiableError,
  InvalidSignatureError,
  QuorumNotMetError,
  RevokedError,
  ExpiredError,
  IntegrityFailedError,
  InvalidReferenceError,
  BusyError,
  NotReadyError,
  DrainingError,
  CanceledError,
  BreakerOpenError,
  BrownoutError,
  UnavailableError,
  ClosedError,
  TimeoutError,
  InternalError,
  NotImplementedError,
  isRonError,
  toRonError,
  errorFromEnvelope,
  errorForCode,
  UsageErrorCodes,
  RonUsageError,
  isRonUsageError,
} from './errors.js'
export type { ErrorCode, RonErrorOptions, ErrorEnvelope, UsageErrorCode } from './errors.js'

// Time, randomness, abort, bytes, metrics sink.
export { systemClock } from './clock.js'
export type { Clock, TimerHandle } from './clock.js'
export { systemRandom } from './random.js'
export type { Random } from './random.js'
export { abortReason, waitUnlessAborted, raceAbort, onAbort, signalOf, linkSignals } from './abort.js'
export type { WaitSettlers, SignalOption, LinkedSignal } from './abort.js'
export { collectBytes } from './bytes.js'
export { noopMetrics } from './metrics-sink.js'
export type { Labels, MetricsSink } from './metrics-sink.js'
export { setHeapGrowingFactor, SERVER_HEAP_GROWING_FACTOR, setYoungGenerationGrowth, SERVER_YOUNG_GENERATION_GROWTH } from './heap.js'

// Faults of the local disk (SPEC.md §4) and canonical JSON (RFC 8785).
export { diskFaultReason, toDiskFault, hasErrnoCode } from './disk-fault.js'
export type { DiskFaultReason } from './disk-fault.js'
export { canonicalJson, canonicalBytes } from './canonical-json.js'
export type { JsonValue } from './canonical-json.js'
