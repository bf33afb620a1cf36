/**
 * BLAKE3-256 hashing with the fastest backend that loads: the native `@napi-rs/blake-hash`
 * binding where its prebuilt binary exists for this platform, `@noble/hashes` (pure JS) otherwise.
 *
 * @module
 */

import { createRequire } from 'node:module'
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js'
import { RonUsageError } from '../errors.js'

/** Which BLAKE3 implementation is in use. */
export type Blake3Backend = 'native' | 'noble'

/** An incremental BLAKE3-256 hasher for streams. */
export interface Blake3Hasher {
  /** Feeds `chunk` into the hash (the bytes are not retained). Returns the hasher for chaining. */
  update(chunk: Uint8Array): this
  /**
   * Finishes and returns the 32-byte digest. One-shot: a hasher cannot be updated or digested
   * again afterwards.
   * @throws {@link Error} when called twice or after `update` following `digest`.
   */
  digest(): Uint8Array
  /**
   * Starts over, as a fresh hasher would (also after `digest()`). Cheaper than a new hasher for
   * many small inputs in a row (a chunk table): each native hasher object costs about 20 µs to
   * create and collect. Returns the hasher for chaining.
   */
  reset(): this
}

interface NativeHasher {
  update(input: Uint8Array): unknown
  digestBuffer(): Buffer
  reset(): void
}
interface NativeModule {
  blake3(input: Uint8Array): Buffer
  Blake3Hasher: new () => NativeHasher
}

function loadNative(): NativeModule | undefined {
  try {
    const require = createRequire(import.meta.url)
    const mod = require('@napi-rs/blake-hash') as Partial<NativeModule>
    if (typeof mod.blake3 !== 'function' || typeof mod.Blake3Hasher !== 'function') return undefined
    return mod as NativeModule
  } catch {
    return undefined
  }
}

// Loaded on the first hash, not at import: the binding's dlopen costs a client command that never
// hashes (`ron-node put`, whose address the node computes) 25-100 ms. `@ron/core`'s main entry
// still loads it at once, through `blake3Backend` (backend.ts).
let native: NativeModule | undefined
let nativeTried = false

function nativeModule(): NativeModule | undefined {
  if (!nativeTried) {
    nativeTried = true
    native = process.env['RON_BLAKE3_BACKEND'] === 'noble' ? undefined : loadNative()
  }
  return native
}

/**
 * Loads the backend now (if no hash did yet) and names it.
 * @internal
 */
export function loadBlake3Backend(): Blake3Backend {
  return nativeModule() ? 'native' : 'noble'
}

/**
 * BLAKE3-256 of `data`.
 *
 * @returns a 32-byte digest.
 * @example
 * ```ts
 * const d = blake3(new TextEncoder().encode('hello'))
 * d.length // 32
 * ```
 */
export function blake3(data: Uint8Array): Uint8Array {
  // The binding reads Buffers and Uint8Array views (any offset) in place: no copy either way.
  const n = nativeTried ? native : nativeModule()
  if (n) return n.blake3(data)
  return nobleBlake3(data)
}

/** The incremental state of either backend, reduced to what a one-shot hasher needs. */
interface HashState {
  update(input: Uint8Array): unknown
  digest(): Uint8Array
  /** Back to the empty input; returns the state to use from now on. */
  reset(): HashState
}

/** A hasher that may be digested once (until `reset()`); use after `digest()` throws. */
class OnceHasher implements Blake3Hasher {
  #h: HashState | undefined
  readonly #state: HashState
  constructor(h: HashState) {
    this.#h = h
    this.#state = h
  }
  reset(): this {
    this.#h = this.#state.reset()
    return this
  }
  update(chunk: Uint8Array): this {
    if (!this.#h) throw new RonUsageError('RON_HASHER_FINISHED', 'blake3 hasher already digested')
    this.#h.update(chunk)
    return this
  }
  digest(): Uint8Array {
    if (!this.#h) throw new RonUsageError('RON_HASHER_FINISHED', 'blake3 hasher already digested')
    const d = this.#h.digest()
    this.#h = undefined
    return d
  }
}

function nativeHasher(mod: NativeModule): Blake3Hasher {
  const h = new mod.Blake3Hasher()
  const state: HashState = {
    update: (c) => h.update(c),
    digest: () => h.digestBuffer(),
    reset: () => {
      h.reset()
      return state
    },
  }
  return new OnceHasher(state)
}

/** noble's hashers cannot be reset: a reset swaps in a new one behind the same state. */
function nobleState(): HashState {
  let h = nobleBlake3.create()
  const state: HashState = {
    update: (c) => h.update(c),
    digest: () => h.digest(),
    reset: () => {
      h = nobleBlake3.create()
      return state
    },
  }
  return state
}

function nobleHasher(): Blake3Hasher {
  return new OnceHasher(nobleState())
}

/**
 * A new incremental BLAKE3-256 hasher on the loaded backend. Hashing in chunks gives the same
 * digest as {@link blake3} over the concatenation.
 *
 * @example
 * ```ts
 * const h = createBlake3()
 * for await (const chunk of stream) h.update(chunk)
 * const address = toAddress(h.digest())
 * ```
 */
export function createBlake3(): Blake3Hasher {
  const n = nativeTried ? native : nativeModule()
  return n ? nativeHasher(n) : nobleHasher()
}

/**
 * Backend-specific constructors, for cross-checking and benchmarks only.
 * @internal
 */
export const blake3Backends = {
  get native(): { oneShot(d: Uint8Array): Uint8Array; create(): Blake3Hasher } | undefined {
    const n = nativeModule()
    return n ? { oneShot: (d: Uint8Array): Uint8Array => n.blake3(d), create: (): Blake3Hasher => nativeHasher(n) } : undefined
  },
  noble: { oneShot: (d: Uint8Array): Uint8Array => nobleBlake3(d), create: (): Blake3Hasher => nobleHasher() },
} as const
