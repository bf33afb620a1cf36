/**
 * Fetches a manifest from storage over the transport and checks it: it must exist, its bytes must
 * hash to its address, and it must parse as a manifest of either kind, a file or a directory
 * (SPEC §6a). Anything else is 422 `InvalidReference`, saying which.
 *
 * @module
 */

import { InvalidReferenceError, NotReadyError, TimeoutError, addressOf, isRonError, throwIfError } from '@ron/core'
import type { Address, Clock, Transport } from '@ron/core'
import { parseManifest, type AnyManifest, type Manifest } from './contracts.js'

/** What {@link fetchManifest} needs. */
export interface ManifestFetchEnv {
  /** How storage is reached (core's `noTransport()` without one: 503 `Unavailable` `no_transport`). */
  transport: Transport
  /** Transport target of storage. */
  storage: string
  /** Deadline of the whole fetch (head and body). */
  timeoutMs: number
  maxBytes: number
  clock: Clock
  /** Counts a manifest whose bytes do not hash to its address. */
  onIntegrityFail(): void
}

/**
 * Fetches and validates the manifest at `address`.
 * @throws {@link InvalidReferenceError} (`details.reason`: `missing`, `too_large`, `integrity`,
 *   `not_a_manifest`) when it is not a usable manifest.
 * @throws {@link NotReadyError} when storage is busy (429) or fails (5xx): retryable; storage's
 *   own 503 or 504 as it is; 503 `Unavailable` (`no_transport`) without a transport.
 */
export async function fetchManifest(env: ManifestFetchEnv, address: Address, signal?: AbortSignal): Promise<{ manifest: AnyManifest; text: string }> {
  // One deadline for head and body: a storage node that trickles the body cannot hold the write.
  const deadline = new AbortController()
  const timer = env.clock.setTimeout(() => deadline.abort(new TimeoutError('manifest fetch deadline exceeded', { details: { target: env.storage } })), env.timeoutMs)
  timer.unref?.()
  try {
    return await fetchChecked(env, env.transport, address, signal === undefined ? deadline.signal : AbortSignal.any([signal, deadline.signal]))
  } catch (e) {
    if (deadline.signal.aborted && !(signal?.aborted ?? false)) throw deadline.signal.reason as TimeoutError
    throw e
  } finally {
    env.clock.clearTimeout(timer)
  }
}

async function fetchChecked(env: ManifestFetchEnv, transport: Transport, address: Address, signal: AbortSignal): Promise<{ manifest: AnyManifest; text: string }> {
  const res = await transport.request(env.storage, {
    method: 'GET',
    path: `/o/${address}`,
    timeoutMs: env.timeoutMs,
    signal,
  })
  if (res.status === 404) {
    await res.dump()
    throw invalid(address, 'missing', 'the manifest is not in storage')
  }
  try {
    await throwIfError(res)
  } catch (e) {
    // Storage's deadline and unavailability pass through (504, 503); a busy or failing storage
    // is a retryable 503 of ours, never our own 500 and never a (final) 422 for a manifest that
    // may well be there.
    if (isRonError(e, 'Timeout') || (isRonError(e) && e.status === 503)) throw e
    if (isRonError(e) && (e.status >= 500 || e.code === 'Busy')) {
      throw new NotReadyError(`storage could not serve the manifest (${e.code})`, {
        details: { target: env.storage, reason: e.code === 'Busy' ? 'storage_busy' : 'storage_error' },
        ...(e.retryAfterMs === undefined ? {} : { retryAfterMs: e.retryAfterMs }),
        cause: e,
      })
    }
    throw invalid(address, 'missing', 'storage refused the manifest read')
  }
  const declared = Number(res.headers['content-length'])
  if (Number.isFinite(declared) && declared > env.maxBytes) {
    await res.dump()
    throw invalid(address, 'too_large', `the manifest is larger than ${env.maxBytes} bytes`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const c of res.body) {
    size += c.byteLength
    if (size > env.maxBytes) {
      await res.dump()
      throw invalid(address, 'too_large', `the manifest is larger than ${env.maxBytes} bytes`)
    }
    chunks.push(c)
  }
  const bytes = Buffer.concat(chunks, size)
  if (addressOf(bytes) !== address) {
    env.onIntegrityFail()
    throw invalid(address, 'integrity', 'the bytes storage returned do not hash to the address')
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw invalid(address, 'not_a_manifest', 'the object is not UTF-8 JSON')
  }
  return { manifest: parseManifestText(address, text), text }
}

/**
 * Parses the text of a manifest of either kind.
 * @throws {@link InvalidReferenceError} (`not_a_manifest`) when it is not JSON or not a manifest.
 */
export function parseManifestText(address: Address, text: string): AnyManifest {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalid(address, 'not_a_manifest', 'the object is not JSON')
  }
  try {
    return parseManifest(value)
  } catch (e) {
    throw invalid(address, 'not_a_manifest', `the object is not a manifest: ${e instanceof Error ? e.message : 'invalid'}`)
  }
}

/**
 * Checks a file manifest a peer index sent with its exact text: the text must hash to
 * `manifestAddress` and parse as a file manifest (a directory manifest's text never travels in an
 * answer). @returns the manifest parsed from the text, or `undefined` when the check fails.
 */
export function verifyManifestText(manifestAddress: Address, text: string | undefined): Manifest | undefined {
  if (text === undefined || addressOf(new TextEncoder().encode(text)) !== manifestAddress) return undefined
  try {
    const m = parseManifestText(manifestAddress, text)
    return m.kind === 'dir' ? undefined : m
  } catch {
    return undefined
  }
}

/** A manifest checked against its address, with its exact text. */
export interface VerifiedManifest {
  manifest: AnyManifest
  text: string
}

/** Bytes a {@link ManifestCache} holds at most by default. */
export const MANIFEST_CACHE_BYTES = 2 * 1024 * 1024
/** How long a {@link ManifestCache} keeps a manifest by default, in ms. */
export const MANIFEST_CACHE_TTL_MS = 60_000

/**
 * Manifests the index fetched and verified lately, by address, so that binding more names to one
 * (or rebinding one) costs no storage round trip. A manifest is content-addressed, so what was
 * verified stays valid; what a hit skips is only storage's word that it still holds the manifest,
 * and that word is at most `ttlMs` old. Bounded by the bytes of the texts held (a manifest over a
 * quarter of the bound is not kept); entries leave oldest first, when expired or to make room,
 * on every insert and on every lookup that finds an expired one.
 */
export class ManifestCache {
  readonly #entries = new Map<Address, { m: VerifiedManifest; bytes: number; expiresAt: number }>()
  #bytes = 0

  constructor(
    private readonly maxBytes = MANIFEST_CACHE_BYTES,
    private readonly ttlMs = MANIFEST_CACHE_TTL_MS,
  ) {}

  /** Bytes of manifest text held. */
  get bytes(): number {
    return this.#bytes
  }

  /** Manifests held. */
  get size(): number {
    return this.#entries.size
  }

  /** The verified manifest at `address`, if it was verified within the TTL. */
  get(address: Address, now: number): VerifiedManifest | undefined {
    const e = this.#entries.get(address)
    if (e === undefined) return undefined
    if (e.expiresAt > now) return e.m
    this.#trim(now, 0)
    return undefined
  }

  /** Keeps `m` (verified against `address`) until the TTL passes. */
  set(address: Address, m: VerifiedManifest, now: number): void {
    const bytes = m.text.length * 2
    if (bytes > this.maxBytes / 4) return
    this.#drop(address)
    this.#trim(now, bytes)
    this.#entries.set(address, { m, bytes, expiresAt: now + this.ttlMs })
    this.#bytes += bytes
  }

  /** Forgets everything. */
  clear(): void {
    this.#entries.clear()
    this.#bytes = 0
  }

  #drop(address: Address): void {
    const e = this.#entries.get(address)
    if (e === undefined) return
    this.#entries.delete(address)
    this.#bytes -= e.bytes
  }

  /** Drops expired entries, then the oldest until `room` more bytes fit. Insertion order is expiry order. */
  #trim(now: number, room: number): void {
    for (const [a, e] of this.#entries) {
      if (e.expiresAt > now && this.#bytes + room <= this.maxBytes) return
      this.#entries.delete(a)
      this.#bytes -= e.bytes
    }
  }
}

function invalid(address: Address, reason: string, message: string): InvalidReferenceError {
  return new InvalidReferenceError(`manifest ${address}: ${message}`, { details: { field: 'manifestAddress', address, reason } })
}
