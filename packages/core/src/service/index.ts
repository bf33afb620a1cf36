/**
 * The service shape: {@link createServiceHost} (the base of every `create*Service`), the
 * {@link RonService} and topology types, the {@link Logger} interface, and the CONCURRENCY.md
 * golden-test helpers.
 *
 * @module @ron/core/service
 */

export type { ChannelOverflow, ChannelSpec, TaskSpec, Topology, HealthReport, RonService, ListenerPolicy } from './types.js'
export { noopLogger } from './logger.js'
export type { Logger, LogFn } from './logger.js'
export { createServiceHost, DEFAULT_DRAIN_DEADLINE_MS, DEFAULT_POOL_CONCURRENCY } from './host.js'
export type { ServiceHost, ServiceHostOptions } from './host.js'
export { TASKS_HEADER, CHANNELS_HEADER, topologyTables, concurrencyDocProblems, assertConcurrencyDoc } from './topology-doc.js'
export type { ReloadableConfig, ReloadHook } from './reload.js'
export { serviceBaseShape, serviceBaseSchema, SERVICE_BASE_DEFAULTS, BASE_IMMUTABLE_KEYS } from './base-config.js'
export type { ServiceBaseConfig, ServiceBaseDefaults, HttpConfig, HttpDefaults, CorsConfig } from './base-config.js'
export { noTransport, noTransportError, splitRuntime, SERVICE_RUNTIME_KEYS } from './runtime.js'
export type { ServiceRuntime, ServiceAuth, OutgoingTokens } from './runtime.js'
