/**
 * Readiness and liveness: named dependencies, shutdown phases, `/healthz` and `/readyz` replies.
 *
 * @module
 */

export * from './readiness.js'
