/**
 * Concurrency primitives: bounded queue, broadcast, watch, supervisor and work pool.
 *
 * @module @ron/core/concurrency
 */

export { BoundedQueue } from './bounded-queue.js'
export type { BoundedQueueOptions, OverflowPolicy } from './bounded-queue.js'
export { Broadcast, Subscription } from './broadcast.js'
export type { BroadcastOptions, BroadcastRecv, SubscribeOptions } from './broadcast.js'
export { Watch } from './watch.js'
export { Supervisor } from './supervisor.js'
export type {
  RestartPolicy,
  ShutdownReport,
  SpawnOptions,
  SupervisorEvent,
  SupervisorOptions,
  TaskDescription,
  TaskHandle,
  TaskState,
} from './supervisor.js'
export { WorkPool } from './work-pool.js'
export type { WorkPoolOptions } from './work-pool.js'
export { backoffDelay } from './backoff.js'
export { abortReason, waitUnlessAborted, raceAbort, onAbort, signalOf, linkSignals } from './abort.js'
export type { WaitSettlers, SignalOption, LinkedSignal } from './abort.js'
export { WakeableSleep } from './wakeable-sleep.js'
export type { Jitter } from './backoff.js'
