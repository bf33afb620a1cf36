/**
 * The index's admin operations (seed svc-index, *orig*: "admin reindex (202, Idempotency-Key kept
 * 24 h), admin pin/unpin"), behind the `index:admin` scope:
 *
 * - **reindex** rebuilds what the index derives from its name store: every stored record is
 *   homed on this node (bindings written before records were signed, or under another identity;
 *   signed when served),
 *   the `index_names` gauge is recounted, and both answer caches are dropped (pinned keys stay
 *   pinned and are kept again on their next answer). A request names an `Idempotency-Key`: the
 *   same key from the same principal within 24 h gets the same answer without a second reindex
 *   (a concurrent one joins the first); a reindex that fails forgets its key, so a retry runs.
 * - **pin/unpin**: a pinned key's positive answer is resolved now and kept in the cache past its
 *   TTL and past the cache bound (never expired, never evicted) until unpinned; name writes and
 *   `?fresh` still replace it. Pins live in memory (a restart forgets them), at most
 *   {@link MAX_PINS}.
 *
 * @module
 */

import { BusyError, MalformedError } from '@ron/core'
import type { Clock, Reply } from '@ron/core'

/** How long an `Idempotency-Key` is remembered (seed: 24 h). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
/** Keys remembered at most; a new key beyond them is refused with 429 Busy until some expire. */
export const MAX_IDEMPOTENCY_KEYS = 1024
/** Keys pinned at most (429 Busy beyond). */
export const MAX_PINS = 1024

const KEY_RE = /^[\x21-\x7e]{1,128}$/

/**
 * Parses an `Idempotency-Key` header: 1–128 visible ASCII characters.
 * @throws {@link MalformedError} (`details.field: 'Idempotency-Key'`) when absent or malformed.
 */
export function parseIdempotencyKey(v: string | string[] | undefined): string {
  if (typeof v !== 'string' || !KEY_RE.test(v)) {
    throw new MalformedError('Idempotency-Key must be 1 to 128 visible ASCII characters', { details: { field: 'Idempotency-Key' } })
  }
  return v
}

interface Remembered {
  at: number
  reply: Promise<Reply>
}

/**
 * Remembers the answers of non-repeatable requests by principal and `Idempotency-Key` for
 * {@link IDEMPOTENCY_TTL_MS} on the injected clock. Bounded: {@link MAX_IDEMPOTENCY_KEYS}.
 */
export class IdempotencyCache {
  readonly #entries = new Map<string, Remembered>()
  readonly #clock: Clock
  readonly #ttlMs: number

  constructor(clock: Clock, ttlMs = IDEMPOTENCY_TTL_MS) {
    this.#clock = clock
    this.#ttlMs = ttlMs
  }

  /** Keys remembered now (including expired ones not yet pruned). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * The answer remembered for (`principal`, `key`), or `run()`'s, remembered from now on.
   * @returns the reply and whether it was replayed.
   * @throws {@link BusyError} (`details.reason: 'idempotency_keys'`) when too many keys are remembered.
   */
  async run(principal: string, key: string, run: () => Promise<Reply>): Promise<{ reply: Reply; replayed: boolean }> {
    const id = `${principal}\n${key}`
    const now = this.#clock.now()
    this.#prune(now)
    const known = this.#entries.get(id)
    if (known !== undefined) return { reply: await known.reply, replayed: true }
    if (this.#entries.size >= MAX_IDEMPOTENCY_KEYS) {
      throw new BusyError('too many idempotency keys remembered', { details: { reason: 'idempotency_keys' }, retryAfterMs: 60_000 })
    }
    const reply = run()
    const entry = { at: now, reply }
    this.#entries.set(id, entry)
    try {
      return { reply: await reply, replayed: false }
    } catch (e) {
      // A failed run is not an answer to remember: a retry with the same key runs again.
      if (this.#entries.get(id) === entry) this.#entries.delete(id)
      throw e
    }
  }

  #prune(now: number): void {
    // Insertion order is age order: stop at the first key still remembered.
    for (const [id, e] of this.#entries) {
      if (e.at + this.#ttlMs > now) break
      this.#entries.delete(id)
    }
  }

  /** Forgets everything (close). */
  clear(): void {
    this.#entries.clear()
  }
}

/** @throws {@link BusyError} (`details.reason: 'pins'`) when `count` pins are already held. */
export function checkPinRoom(count: number): void {
  if (count >= MAX_PINS) throw new BusyError(`at most ${MAX_PINS} keys may be pinned`, { details: { reason: 'pins' }, retryAfterMs: 60_000 })
}
