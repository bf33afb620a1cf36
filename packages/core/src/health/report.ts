/**
 * The health of a service as the host reports it: defined here, in the health layer, so that
 * `Readiness` does not import the service layer above it (`service/types.ts` re-exports it).
 *
 * @module
 */

/** Liveness and readiness of a service. */
export interface HealthReport {
  /** False after supervisor crash-loop escalation; `reason` says why. */
  live: boolean
  /** Ready to serve reads. */
  ready: boolean
  /** Ready to accept writes (a full or slow disk turns this off first). */
  writeReady: boolean
  /**
   * Per named path (SPEC.md 3.3a), whether it accepts work, e.g. `{ issue: false, verify: true }`.
   * Services shed expensive paths first and keep cheap reads up. Empty when the service declares none.
   */
  paths: Record<string, boolean>
  /** Names of dependencies that are not ready, then the reason of each path that is off, then `draining`. */
  missing: string[]
  /** Human-readable reasons (dependency and path reasons, or why the service is not live). */
  reason?: string
}
