/**
 * The third argument of every factory, `create*Service(config, transport, runtime)` (SPEC.md 2):
 * the injected objects that are not configuration data (clock, randomness, logger, metrics sink,
 * token verification, outgoing tokens, node identity and directory). A service extends
 * {@link ServiceRuntime} with its own (a KMS, a store, an audit sink) and hands it to
 * `createServiceHost({ runtime })`. And the one answer to "this service has no transport".
 *
 * @module
 */

import type { Clock } from '../clock.js'
import type { Random } from '../random.js'
import type { MetricsSink } from '../metrics-sink.js'
import type { NodeDirectory, NodeIdentity } from '../auth/node-identity.js'
import type { KeySource } from '../auth/key-source.js'
import type { TokenVerifier } from '../auth/types.js'
import type { Jwk } from '../auth/issuer-key.js'
import { UnavailableError } from '../errors.js'
import type { Transport } from '../transport/types.js'
import type { Logger } from './logger.js'

/** Token verification of a service: a ready verifier, or the keys to build one from. */
export interface ServiceAuth {
  verifier?: TokenVerifier
  keys?: KeySource | { keys: Jwk[] }
}

/**
 * A source of short-lived bearer tokens for a service's outgoing calls: core's
 * `createTokenProvider(...)` fits as is.
 */
export interface OutgoingTokens {
  token(req: { aud: string; scope: string[] }, signal?: AbortSignal): string | Promise<string>
}

/** The injected objects every service accepts; a service extends it with its own. */
export interface ServiceRuntime {
  /** @default systemClock */
  clock?: Clock
  /** @default systemRandom */
  random?: Random
  /** pino-compatible logger. @default noopLogger */
  logger?: Logger
  /**
   * A sink that also receives everything the service's core primitives report (queues,
   * supervisor, HTTP timeouts), for an application with its own metrics system. The service's
   * own registry (`/metrics`) is kept either way. @default none
   */
  metrics?: MetricsSink
  /** Token verification. @default none: every scoped route answers 401 `no_verifier` */
  auth?: ServiceAuth
  /** Tokens for outgoing calls. @default none: outgoing calls carry no token */
  tokens?: OutgoingTokens
  /** This node's identity (signing what the node vouches for). @default none (a service that needs one makes an ephemeral one) */
  identity?: NodeIdentity
  /** The nodes this node believes (SPEC.md 5 "Peers"). @default none */
  nodes?: NodeDirectory
}

/** Keys of {@link ServiceRuntime}, for splitting a legacy config that still carries them. */
export const SERVICE_RUNTIME_KEYS = ['clock', 'random', 'logger', 'metrics', 'auth', 'tokens', 'identity', 'nodes'] as const

/**
 * Splits the keys in `keys` out of `config` (a config from before the runtime argument, which
 * carried runtime objects among its data), returning the data part and the runtime part. Values
 * in `runtime` win over the ones found in `config`.
 *
 * @example
 * ```ts
 * const { data, runtime: rt } = splitRuntime(config, runtime, [...SERVICE_RUNTIME_KEYS, 'backend'])
 * ```
 */
export function splitRuntime<R extends object>(config: object, runtime: R | undefined, keys: readonly string[]): { data: Record<string, unknown>; runtime: R } {
  const data: Record<string, unknown> = { ...(config as Record<string, unknown>) }
  const found: Record<string, unknown> = {}
  for (const k of keys) {
    if (k in data) {
      if (data[k] !== undefined) found[k] = data[k]
      delete data[k]
    }
  }
  for (const [k, v] of Object.entries(runtime ?? {})) if (v !== undefined) found[k] = v
  return { data, runtime: found as R }
}

/**
 * The error of a call that needs another service when no transport was given: 503 `Unavailable`
 * with `details.reason: 'no_transport'` (SPEC.md 4: something the request needs is unreachable).
 */
export function noTransportError(service: string, target: string): UnavailableError {
  return new UnavailableError(`service ${service} has no transport to reach ${target}`, { details: { reason: 'no_transport', target }, retryAfterMs: 5000 })
}

/**
 * The transport a service uses when none was given: every request rejects with
 * {@link noTransportError}. One answer for all five services.
 *
 * @example
 * ```ts
 * const net = transport ?? noTransport('storage')
 * ```
 */
export function noTransport(service: string): Transport {
  return {
    request: (target) => Promise.reject(noTransportError(service, target)),
    close: () => Promise.resolve(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  }
}
