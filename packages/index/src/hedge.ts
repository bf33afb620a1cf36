/**
 * Hedged peer lookups (seed section 5): ask α peers in parallel; if none has answered
 * satisfactorily after the hedge delay (or all of them have already failed), ask β more distinct
 * peers; the first satisfactory answer aborts every other request (through its `AbortSignal`, so
 * the transport actually stops it); one deadline bounds the whole lookup.
 *
 * @module
 */

import { TimeoutError, abortReason } from '@ron/core'
import type { Clock } from '@ron/core'

/** Outcome of a hedged (β) request, the `result` label of `dht_hedged_requests_total`. */
export type HedgeResult = 'won' | 'lost' | 'failed'

/** Options of {@link hedgedLookup}. */
export interface HedgedLookupOptions<P, T> {
  /** Peers in preference order; the first α are asked first, the next β after the hedge delay. */
  candidates: readonly P[]
  alpha: number
  beta: number
  hedgeMs: number
  /** Absolute time (on `clock`) at which the lookup fails with {@link TimeoutError}. */
  deadlineAt: number
  clock: Clock
  /** The caller's signal (request gone, shutdown). */
  signal?: AbortSignal
  /** Asks one peer; resolves `undefined` for a "not found" answer; rejects on errors. */
  call(peer: P, signal: AbortSignal): Promise<T | undefined>
  /** Told what became of every hedged (β) request. */
  onHedge?(result: HedgeResult): void
}

/** What a hedged lookup found. */
export type LookupOutcome<P, T> = { found: true; value: T; peer: P } | { found: false; errors: number; asked: number }

/**
 * Runs the hedged lookup.
 *
 * @returns the first satisfactory answer, or `found: false` when every asked peer answered "not
 *   found" or failed before the deadline.
 * @throws {@link TimeoutError} when the deadline passes with requests still pending.
 * @throws the signal's reason when `signal` aborts.
 */
export function hedgedLookup<P, T>(o: HedgedLookupOptions<P, T>): Promise<LookupOutcome<P, T>> {
  if (o.signal?.aborted === true) return Promise.reject(abortReason(o.signal))
  return new Promise((resolve, reject) => {
    const queue = [...o.candidates]
    const inflight = new Map<P, { ctl: AbortController; hedged: boolean }>()
    let settled = false
    let betaLaunched = false
    let errors = 0
    let asked = 0

    const finish = (done: () => void): void => {
      if (settled) return
      settled = true
      o.clock.clearTimeout(hedgeTimer)
      o.clock.clearTimeout(deadlineTimer)
      o.signal?.removeEventListener('abort', onAbort)
      for (const { ctl, hedged } of inflight.values()) {
        if (hedged) o.onHedge?.('lost')
        ctl.abort()
      }
      inflight.clear()
      done()
    }
    const launch = (n: number, hedged: boolean): void => {
      for (let i = 0; i < n && queue.length > 0 && !settled; i++) {
        const peer = queue.shift() as P
        const ctl = new AbortController()
        inflight.set(peer, { ctl, hedged })
        asked++
        // A synchronous throw from `call` counts as a failed answer, like a rejection.
        Promise.resolve()
          .then(() => o.call(peer, ctl.signal))
          .then(
            (v) => settle(peer, v, false),
            () => settle(peer, undefined, true),
          )
      }
    }
    const settle = (peer: P, v: T | undefined, failed: boolean): void => {
      const entry = inflight.get(peer)
      if (settled || entry === undefined) return
      inflight.delete(peer)
      if (failed) errors++
      if (v !== undefined) {
        if (entry.hedged) o.onHedge?.('won')
        finish(() => resolve({ found: true, value: v, peer }))
        return
      }
      if (entry.hedged) o.onHedge?.('failed')
      if (inflight.size > 0) return
      // Everyone asked so far has answered without a result: hedge now rather than wait.
      if (!betaLaunched && queue.length > 0) launchBeta()
      if (inflight.size === 0) finish(() => resolve({ found: false, errors, asked }))
    }
    const launchBeta = (): void => {
      if (betaLaunched || settled) return
      betaLaunched = true
      o.clock.clearTimeout(hedgeTimer)
      launch(o.beta, true)
    }
    const onAbort = (): void => finish(() => reject(abortReason(o.signal!)))

    const hedgeTimer = o.clock.setTimeout(launchBeta, o.hedgeMs)
    hedgeTimer.unref?.()
    const deadlineTimer = o.clock.setTimeout(
      () => finish(() => reject(new TimeoutError('resolve deadline exceeded', { details: { asked, pending: inflight.size } }))),
      Math.max(0, o.deadlineAt - o.clock.now()),
    )
    deadlineTimer.unref?.()
    o.signal?.addEventListener('abort', onAbort, { once: true })

    launch(o.alpha, false)
    if (inflight.size === 0 && !settled) {
      launchBeta()
      if (inflight.size === 0) finish(() => resolve({ found: false, errors, asked }))
    }
  })
}
