/**
 * Liveness and readiness: named dependencies, paths and the shutdown phase.
 *
 * @module
 */

export { Readiness } from './readiness.js'
export type { Gate, DependencySpec, Liveness, ReadinessOptions } from './readiness.js'
