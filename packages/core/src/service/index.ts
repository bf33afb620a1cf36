/**
 * The service shape: {@link createServiceHost} (the base of every `create*Service`), the
 * {@link RonService} and topology types, the {@link Logger} interface, and the CONCURRENCY.md
 * golden-test helpers.
 *
 * @module
 */

export type { ChannelOverflow, ChannelSpec, TaskSpec, Topology, HealthReport, RonService } from './types.js'
export * from './logger.js'
export * from './host.js'
export * from './topology-doc.js'
export type { ReloadableConfig, ReloadHook } from './reload.js'
