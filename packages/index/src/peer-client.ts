/**
 * Queries one peer index: `GET /resolve/:key` with the peer flag (`x-ron-peer: 1`), which makes the
 * peer answer from its own cache and store only, never fanning out further (SPEC §6b). Runs
 * through the peer's breaker; transient errors are retried (max `tries`, 50–100 ms jitter) only
 * while the breaker is closed.
 *
 * @module
 */

import { CanceledError, InternalError, TimeoutError, isRonError, retry, throwIfError } from '@ron/core'
import type { Clock, MetricsSink, Random, Transport, TransportResponse } from '@ron/core'
import { z } from 'zod'
import { MAX_MANIFEST_TEXT, resolutionSchema } from './answer.js'
import type { PeerHealth } from './breakers.js'
import type { ResolvedIndexConfig } from './config.js'

/** Header marking a query from a peer index (answer from cache and store only). */
export const PEER_HEADER = 'x-ron-peer'

/**
 * Largest peer answer read, in bytes. The largest well-formed answer (a 2 MiB file manifest text,
 * at most doubled by JSON escaping, and 256 providers) stays under it; a peer that sends more is
 * cut off and counted as failed, so a broken or hostile peer cannot make this index buffer an
 * unbounded body. (A directory manifest's text never travels in an answer.)
 */
const MAX_ANSWER_BYTES = 2 * MAX_MANIFEST_TEXT + 1024 * 1024

/** Headers of a peer query without a correlation id (shared: built once). */
const PEER_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [PEER_HEADER]: '1', accept: 'application/json' })

/** Errors worth retrying against the same peer: it was briefly unreachable or busy. */
export function isTransient(e: unknown): boolean {
  return isRonError(e) && (e.code === 'NotReady' || e.code === 'Busy' || e.code === 'Draining')
}

/** What {@link queryPeer} needs. */
export interface PeerQueryEnv {
  transport: Transport
  clock: Clock
  random: Random
  metrics: MetricsSink
  cfg: ResolvedIndexConfig
  /** The correlation id of the request that asks (SPEC §4: carried to every service a request reaches). */
  corrId?: string
}

/** A peer's answer as read off the wire (its name record still to be verified). */
export type PeerResolution = z.infer<typeof resolutionSchema>

/** What a peer said: an answer, or "not found" with the signed tombstone it may have sent along. */
export type PeerReply = { found: true; answer: PeerResolution } | { found: false; tombstone: unknown }

/** A NotFound a peer may send with the tombstone of a name deleted at its home (SPEC §6a). */
const notFoundSchema = z.object({ error: z.object({ details: z.object({ record: z.unknown().optional() }).optional() }) })

/**
 * Asks `peer` for `key` until `deadlineAt` (bypassing its caches when `fresh`).
 * @returns the peer's answer, or `found: false` when it answered 404 (with `tombstone` when it
 *   sent one along, `undefined` otherwise).
 * @throws the peer's error, {@link BreakerOpenError}, {@link TimeoutError}, or a cancellation.
 */
export async function queryPeer(env: PeerQueryEnv, peer: PeerHealth, key: string, deadlineAt: number, signal: AbortSignal, fresh = false): Promise<PeerReply> {
  const { cfg, clock } = env
  return retry(
    () =>
      peer.breaker.execute(async () => {
        const remaining = deadlineAt - clock.now()
        if (remaining <= 0) throw new TimeoutError('resolve budget spent', { details: { target: peer.target } })
        const started = clock.now()
        let res
        try {
          res = await env.transport.request(peer.target, {
            method: 'GET',
            // `?fresh` travels on: a fresh resolve bypasses the peers' caches too.
            path: `/resolve/${encodeURIComponent(key)}${fresh ? '?fresh=1' : ''}`,
            headers: env.corrId === undefined ? PEER_HEADERS : { ...PEER_HEADERS, 'x-corr-id': env.corrId },
            signal,
            timeoutMs: remaining,
          })
        } catch (e) {
          // A request we aborted (another peer won) is a cancellation, not the peer's fault.
          if (signal.aborted) throw new CanceledError('peer query canceled', { cause: e })
          throw e
        }
        if (res.status === 404) {
          // "Not found" is an answer; a body that cannot be read as one just carries no tombstone.
          const body = await readAnswer(res, peer.target).catch(() => undefined)
          peer.observe(clock.now() - started)
          const nf = notFoundSchema.safeParse(body)
          return { found: false, tombstone: nf.success ? nf.data.error.details?.record : undefined }
        }
        await throwIfError(res)
        const body = await readAnswer(res, peer.target)
        peer.observe(clock.now() - started)
        const parsed = resolutionSchema.safeParse(body)
        // A peer that answers garbage is unhealthy.
        if (!parsed.success) throw new InternalError(`peer ${peer.target} sent a malformed answer`, { details: { target: peer.target } })
        return { found: true, answer: parsed.data }
      }, signal),
    {
      tries: cfg.peers.tries,
      baseMinMs: cfg.peers.retryMinMs,
      baseMaxMs: cfg.peers.retryMaxMs,
      capMs: cfg.peers.retryMaxMs * 4,
      clock,
      random: env.random,
      signal,
      op: 'peer',
      metrics: { ...env.metrics, inc: (name, labels, by) => env.metrics.inc(name === 'retries_total' ? 'backoff_retries_total' : name, labels, by) },
      shouldRetry: (e) => isTransient(e) && peer.breaker.state === 'closed' && deadlineAt - clock.now() > cfg.peers.retryMaxMs,
    },
  )
}

/**
 * Reads a peer's answer as JSON within {@link MAX_ANSWER_BYTES}: a declared length over it is
 * refused before reading, a body that grows past it is abandoned (leaving the loop closes the
 * stream).
 * @throws {@link InternalError} when the answer is too large or not JSON.
 */
async function readAnswer(res: TransportResponse, target: string): Promise<unknown> {
  const tooLarge = (): InternalError => new InternalError(`peer ${target} sent an answer over ${MAX_ANSWER_BYTES} bytes`, { details: { target, reason: 'too_large' } })
  const declared = Number(res.headers['content-length'])
  if (Number.isFinite(declared) && declared > MAX_ANSWER_BYTES) {
    // Both transports' dump() stop the body rather than drain it, and release the request.
    await res.dump()
    throw tooLarge()
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const c of res.body) {
    size += c.byteLength
    if (size > MAX_ANSWER_BYTES) throw tooLarge()
    chunks.push(c)
  }
  try {
    return JSON.parse(new TextDecoder().decode(Buffer.concat(chunks, size))) as unknown
  } catch {
    throw new InternalError(`peer ${target} sent an answer that is not JSON`, { details: { target, reason: 'not_json' } })
  }
}
