/**
 * Resilience policies: deadlines, retries with a budget, circuit breaker, token bucket, admission.
 *
 * @module @ron/core/resilience
 */

export { withDeadline, deadlineSignal } from './deadline.js'
export type { DeadlineOptions, DeadlineSignal } from './deadline.js'
export { retry, isRetryable } from './retry.js'
export type { RetryOptions } from './retry.js'
export { RetryBudget } from './retry-budget.js'
export type { RetryBudgetOptions } from './retry-budget.js'
export { CircuitBreaker } from './circuit-breaker.js'
export type { BreakerSnapshot, BreakerState, BreakerStateChange, CircuitBreakerOptions } from './circuit-breaker.js'
export { TokenBucket } from './token-bucket.js'
export type { TokenBucketOptions } from './token-bucket.js'
export { Admission } from './admission.js'
export type { AdmissionOptions } from './admission.js'
