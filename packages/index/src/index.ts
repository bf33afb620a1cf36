/**
 * `@ron/index`: the resolver. A name (`docs.alice`) or a `b3:` address goes in; the manifest and a
 * ranked provider set come out, through a positive cache, a negative cache, the local store and
 * hedged lookups at peer indexes (α in parallel, β more after the hedge delay, one end-to-end
 * deadline), with a breaker per peer and per-IP admission. Names are durable in LMDB (or kept in
 * memory in amnesia mode); provider records are soft state with a TTL.
 *
 * @example
 * ```ts
 * import { MemoryTransport } from '@ron/core'
 * import { createIndexService, createIndexClient } from '@ron/index'
 *
 * const transport = new MemoryTransport()
 * const index = await createIndexService({ amnesia: true }, transport, { auth: { keys: jwks } })
 * transport.mount('index', index)
 * const client = createIndexClient(transport, { token })
 * await client.announce({ address, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 3600 })
 * const { providers } = await client.resolve(address)
 * ```
 *
 * @packageDocumentation
 * @module @ron/index
 */

/** The service id of `@ron/index`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'index'

export { createIndexService } from './service.js'
export type { IndexService } from './service.js'
export { indexConfigSchema, resolveIndexConfig, DEFAULT_RESOLVER_WORKERS, INDEX_IMMUTABLE_KEYS, INDEX_RUNTIME_KEYS } from './config.js'
export type { IndexConfig, ResolvedIndexConfig, IndexRuntime, IndexServiceOptions } from './config.js'
export { indexTopology, CHANNELS, TASKS, ROUTES, PATHS } from './topology.js'
export { INDEX_METRICS, INDEX_METRIC_NAMES } from './metrics.js'
export { ADMIN_SCOPE } from './routes/index.js'
export { IDEMPOTENCY_TTL_MS, MAX_IDEMPOTENCY_KEYS, MAX_PINS } from './admin.js'
export { PEER_HEADER } from './peer-client.js'
export { RESERVED_TLDS, isReservedName, checkName } from './names.js'
export { parseKey } from './resolver.js'
export type { ResolveOptions, ParsedKey } from './resolver.js'
export type { Resolution, NameResolution, AddressResolution, RankedProvider, AnswerSource, ProvidersAnswer, ManifestKind } from './answer.js'
export type { IndexEvent } from './routes/index.js'
export { DEFAULT_PROVIDER_LIMIT, MAX_PROVIDER_LIMIT, DEFAULT_NAME_LIMIT, MAX_NAME_LIMIT, checkNamePrefix } from './routes/index.js'
export type { NameList } from './routes/index.js'
export { NAME_RECORD_DOMAIN, NAME_RECORD_REJECTIONS, nameRecordBytes, signNameRecord, verifyNameRecord, signedNameRecordSchema } from './name-record.js'
export type { NameRecordFields, SignedNameRecord, StoredNameRecord, NameRecordRejection } from './name-record.js'
export type { NameConflict } from './remote-names.js'
export { ANNOUNCE_REFUSALS } from './metrics.js'
export { createMemoryNameStore, openLmdbNameStore } from './store/index.js'
export type { NameStore, NameRecord, NameState, Expected, WriteResult, LmdbNameStoreOptions } from './store/index.js'
export { hedgedLookup } from './hedge.js'
export type { HedgedLookupOptions, LookupOutcome, HedgeResult } from './hedge.js'
export { createIndexClient } from './client.js'
export type { IndexClient, IndexClientOptions, IndexCallOptions, NameWriteResult, NameDeleteResult, AnnounceResult } from './client.js'
