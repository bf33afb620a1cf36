/**
 * Liveness and readiness: named dependencies, paths and the shutdown phase.
 *
 * @module @ron/core/health
 */

export { Readiness, REVOCATIONS_DEPENDENCY } from './readiness.js'
export type { Gate, DependencySpec, DependencyCheck, PathSpec, Liveness, ReadinessOptions } from './readiness.js'
export type { HealthReport } from './report.js'
