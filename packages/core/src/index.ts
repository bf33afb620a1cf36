/**
 * `@ron/core`: the runtime kit every RON service is built from.
 *
 * - Concurrency: {@link BoundedQueue}, {@link Broadcast}, {@link Watch}, {@link Supervisor}.
 * - Resilience: {@link withDeadline}, {@link retry}, {@link CircuitBreaker}, {@link TokenBucket}, {@link Admission}.
 * - Errors: {@link RonError} and one class per SPEC code.
 * - Addressing: {@link blake3}, {@link parseAddress}.
 * - Host: {@link createServiceHost} (routes, CORS, readiness per path, live reload), {@link serve},
 *   {@link SseHub}/{@link sseEvents}, transports, metrics, health, config.
 * - Capabilities: token verification, the {@link SCOPES} catalog, service identity
 *   ({@link createTokenProvider}, {@link signClientAssertion}).
 * - Contracts between services: {@link providerAnnouncementSchema}, {@link manifestSchema},
 *   {@link nameWriteSchema}.
 *
 * Test doubles (virtual clock, seeded random, test issuer, golden-test helpers) live in
 * `@ron/core/testing`.
 *
 * @example
 * ```ts
 * import { BoundedQueue, isRonError } from '@ron/core'
 *
 * const q = new BoundedQueue<string>({ name: 'work', capacity: 2 })
 * q.trySend('a')
 * q.trySend('b')
 * try { q.trySend('c') } catch (e) { if (isRonError(e, 'Busy')) console.log('full') }
 * ```
 *
 * @packageDocumentation
 * @module @ron/core
 */

// The bottom layer, `@ron/core/base`: typed errors (SPEC.md section 4) and usage errors, time,
// randomness, abort helpers, bytes, the metrics sink, the heap knob, disk faults and canonical
// JSON (RFC 8785). Every name it exports is exported here too (the tarball check holds them equal).
export * from './base.js'

// Concurrency.
export {
  BoundedQueue,
  Broadcast,
  Subscription,
  Watch,
  Supervisor,
  WorkPool,
  WakeableSleep,
  backoffDelay,
  waitUnlessAborted,
  raceAbort,
  onAbort,
  signalOf,
  linkSignals,
} from './concurrency/index.js'
export type {
  BoundedQueueOptions,
  OverflowPolicy,
  BroadcastOptions,
  BroadcastRecv,
  SubscribeOptions,
  RestartPolicy,
  ShutdownReport,
  SpawnOptions,
  SupervisorEvent,
  SupervisorOptions,
  TaskDescription,
  TaskHandle,
  TaskState,
  WorkPoolOptions,
  Jitter,
  WaitSettlers,
  SignalOption,
  LinkedSignal,
} from './concurrency/index.js'

// Resilience.
export { withDeadline, deadlineSignal, retry, isRetryable, RetryBudget, CircuitBreaker, TokenBucket, Admission } from './resilience/index.js'
export type {
  DeadlineOptions,
  DeadlineSignal,
  RetryOptions,
  RetryBudgetOptions,
  BreakerSnapshot,
  BreakerState,
  BreakerStateChange,
  CircuitBreakerOptions,
  TokenBucketOptions,
  AdmissionOptions,
} from './resilience/index.js'

// Addressing.
export { blake3, createBlake3, blake3Backend, toAddress, addressOf, parseAddress, isAddress, addressToDigest } from './hash/index.js'
export type { Blake3Hasher, Blake3Backend, Address } from './hash/index.js'

// Capabilities (SPEC.md section 5).
export {
  generateIssuerKey,
  exportIssuerKey,
  importIssuerKey,
  publicKeyFromJwk,
  jwkThumbprint,
  signToken,
  newTokenId,
  staticKeySource,
  RevocationSet,
  createTokenVerifier,
  ed25519Verify,
  generateEd25519KeyPair,
  isStrongEd25519Key,
  KNOWN_CAVEATS,
  checkCaveats,
  nameWithinPrefix,
  NODE_ID_PATTERN,
  isNodeId,
  newNodeId,
  nodeIdentityFromKey,
  nodePublicKey,
  verifyNodeSignature,
  normalizeEndpoint,
  staticNodeDirectory,
  bearerToken,
  SCOPES,
  ALL_SCOPES,
  isScope,
  createTokenProvider,
  localMinter,
  signClientAssertion,
  resolveToken,
} from './auth/index.js'
export type {
  Caveats,
  Claims,
  TokenVerifier,
  IssuerKey,
  Jwk,
  Jwks,
  GenerateIssuerKeyOptions,
  TokenClaimsInput,
  SignTokenOptions,
  KeySource,
  RevocationCheck,
  RevocationSetOptions,
  TokenVerifierOptions,
  TokenRequirement,
  UnauthorizedReason,
  ForbiddenReason,
  CachingTokenVerifier,
  VerifierCacheOptions,
  CaveatRequest,
  Scope,
  TokenMinter,
  MintRequest,
  LocalMinterOptions,
  TokenProvider,
  TokenProviderOptions,
  ClientAssertionOptions,
  TokenSource,
  NodeIdentity,
  KnownNode,
  NodeDirectory,
} from './auth/index.js'
export { isNormalizedPath, SERVICE_CALL_SCOPES, isServiceCallScope, scopeService } from './auth/index.js'
// Networked capabilities (passport's JWKS, the revocation feed), above the transport layer.
export { remoteKeySource, createRevocationFeed } from './auth-remote/index.js'
export type { RemoteKeySource, RemoteKeySourceOptions, RevocationFeed, RevocationFeedOptions, RevocationFeedItem, RevocationFeedPage } from './auth-remote/index.js'

// Contracts between services (SPEC.md section 6a).
export {
  addressSchema,
  providerAnnouncementSchema,
  manifestPartSchema,
  manifestSchema,
  isValidName,
  parseName,
  nameSchema,
  nameWriteSchema,
} from './contracts.js'
export type { ProviderAnnouncement, ManifestPart, Manifest, NameWrite } from './contracts.js'
export { mediaTypeSchema } from './contracts.js'
export {
  MAX_DIR_ENTRIES,
  MAX_MANIFEST_BYTES,
  isEntryPath,
  compareEntryPaths,
  dirEntrySchema,
  dirManifestSchema,
  isDirManifest,
  parseManifest,
  dirManifest,
} from './dir-manifest.js'
export type { DirEntry, DirManifest, AnyManifest } from './dir-manifest.js'
export { mediaTypeFor, mediaTypeTable, DEFAULT_MEDIA_TYPE } from './media-types.js'
export { gatewayLabel, nameFromGatewayLabel, MAX_LABEL_LENGTH } from './gateway-label.js'

// Configuration.
export { ConfigError, parseDuration, parseSize, durationSchema, sizeSchema, loadConfig, validateConfig, configFromEnv, redactConfig, REDACTED } from './config/index.js'
export type { LoadConfigOptions } from './config/index.js'

// HTTP host.
export {
  createHttpHandler,
  RouteConfigError,
  CORR_ID_HEADER,
  corrIdFrom,
  generateCorrId,
  isValidCorrId,
  serve,
  SseHub,
  sseEvents,
  encodeSseEvent,
} from './http/index.js'
export type {
  HttpMethod,
  RonRequest,
  ReplyBody,
  ReplyHeaders,
  Reply,
  RonResponse,
  RouteContext,
  Route,
  HttpHandler,
  HttpHandlerOptions,
  HttpHooks,
  HttpLimits,
  RonServer,
  ServeOptions,
  SseEvent,
  SseMessage,
  SseHubOptions,
  SseEventsOptions,
  CorsOptions,
} from './http/index.js'
export { answerClientError, DEFAULT_SLOW_CLIENT_LIMITS, bodyDeadlineMs } from './http/index.js'
export type { ClientErrorOptions, SlowClientLimits, PaceLimits } from './http/index.js'

// Transports.
export { MemoryTransport, HttpTransport, RoutingTransport, StreamResponse, throwIfError, expectOk, errorFromResponse, parseRetryAfter } from './transport/index.js'
export type {
  Transport,
  TransportRequest,
  TransportResponse,
  DispatchTarget,
  MemoryTransportOptions,
  HttpTransportOptions,
  RoutingTransportOptions,
  StreamResponseInit,
} from './transport/index.js'

// Metrics and health.
export { createServiceMetrics, METRICS_CONTENT_TYPE, mergeExpositions, metricSamples, metricValue } from './metrics/index.js'
export type { ServiceMetrics, ServiceMetricsOptions, MetricSample } from './metrics/index.js'
export type { HttpObserver } from './metrics/index.js'
export { Readiness } from './health/index.js'
export type { Gate, DependencySpec, Liveness, ReadinessOptions } from './health/index.js'
export { REVOCATIONS_DEPENDENCY } from './health/index.js'
export type { DependencyCheck, PathSpec } from './health/index.js'
export { defineMetrics, processMetrics } from './metrics/index.js'
export type { MetricType, MetricSpec, MetricsTable, MetricHandle, MetricHandles, MetricsDeclaration, SeedSeries, ZeroSeries, ProcessMetrics } from './metrics/index.js'

// Service host.
export { createServiceHost, noopLogger } from './service/index.js'
export type {
  ServiceHost,
  ServiceHostOptions,
  ReloadableConfig,
  ReloadHook,
  Logger,
  LogFn,
  ChannelOverflow,
  ChannelSpec,
  TaskSpec,
  Topology,
  HealthReport,
  RonService,
} from './service/index.js'
// The service contract (issue 21): base config, runtime argument, "no transport".
export { serviceBaseShape, serviceBaseSchema, SERVICE_BASE_DEFAULTS, BASE_IMMUTABLE_KEYS, noTransport, noTransportError, splitRuntime, SERVICE_RUNTIME_KEYS } from './service/index.js'
export type { ServiceBaseConfig, ServiceBaseDefaults, HttpConfig, HttpDefaults, CorsConfig, ServiceRuntime, ServiceAuth, OutgoingTokens, ListenerPolicy } from './service/index.js'
