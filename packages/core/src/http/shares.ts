/**
 * Per-principal fair shares of request bodies (SPEC.md 4 "Slow clients"): at most
 * `maxBodiesPerPrincipal` *lingering* bodies of one principal — still arriving after one check
 * period of reading (a tenth of the rate window) — are read at once, so no client (a token
 * subject, an API-key client, or an address for anonymous requests) can hold every reader with
 * slow bodies and push other clients' traffic into queueing, timeouts or brownout; a body read at
 * line speed never takes a share, however many arrive together. Over the share: `429 Busy`,
 * `details.reason: "per_principal"`, with `Retry-After`.
 *
 * @module
 */

import { BusyError } from '../errors.js'

/** How long a client over its share is told to wait. */
const RETRY_AFTER_MS = 1000

/**
 * Lingering bodies per principal. Memory is bounded by the lingering bodies: a principal with
 * none is forgotten. Single writer (the event loop); no lock.
 *
 * @internal
 */
export class BodyShares {
  #max: number
  readonly #active = new Map<string, number>()

  constructor(max: number) {
    this.#max = max
  }

  /** The share in force. */
  get max(): number {
    return this.#max
  }

  /** Changes the share for bodies admitted from now on (a reload). */
  set max(n: number) {
    this.#max = n
  }

  /** Bodies in flight for `principal`. */
  active(principal: string): number {
    return this.#active.get(principal) ?? 0
  }

  /**
   * Admits one body of `principal`; pair with exactly one {@link release}.
   * @throws {@link BusyError} `details.reason: "per_principal"` when the principal is at its share.
   */
  acquire(principal: string): void {
    const n = this.#active.get(principal) ?? 0
    if (n >= this.#max) {
      throw new BusyError(`too many slow request bodies in flight for this client (share ${this.#max})`, {
        details: { reason: 'per_principal', limit: this.#max },
        retryAfterMs: RETRY_AFTER_MS,
      })
    }
    this.#active.set(principal, n + 1)
  }

  /** Releases one body of `principal`. */
  release(principal: string): void {
    const n = (this.#active.get(principal) ?? 1) - 1
    if (n <= 0) this.#active.delete(principal)
    else this.#active.set(principal, n)
  }
}
