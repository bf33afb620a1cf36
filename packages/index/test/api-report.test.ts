/**
 * The public surface of `@ron/index` as a reviewed artefact: a change to the exported (runtime)
 * names is a visible diff here. Types are listed in `src/index.ts`, explicitly.
 */
import { describe, expect, it } from 'vitest'
import * as index from '@ron/index'

describe('exported names', () => {
  it('@ron/index', () => {
    expect(Object.keys(index).sort()).toEqual([
      'ADMIN_SCOPE',
      'ANNOUNCE_REFUSALS',
      'CHANNELS',
      'DEFAULT_NAME_LIMIT',
      'DEFAULT_PROVIDER_LIMIT',
      'DEFAULT_RESOLVER_WORKERS',
      'IDEMPOTENCY_TTL_MS',
      'INDEX_IMMUTABLE_KEYS',
      'INDEX_METRICS',
      'INDEX_METRIC_NAMES',
      'INDEX_RUNTIME_KEYS',
      'MAX_IDEMPOTENCY_KEYS',
      'MAX_NAME_LIMIT',
      'MAX_PINS',
      'MAX_PROVIDER_LIMIT',
      'NAME_RECORD_DOMAIN',
      'NAME_RECORD_REJECTIONS',
      'PATHS',
      'PEER_HEADER',
      'RESERVED_TLDS',
      'ROUTES',
      'SERVICE_ID',
      'TASKS',
      'checkName',
      'checkNamePrefix',
      'createIndexClient',
      'createIndexService',
      'createMemoryNameStore',
      'hedgedLookup',
      'indexConfigSchema',
      'indexTopology',
      'isReservedName',
      'nameRecordBytes',
      'openLmdbNameStore',
      'parseKey',
      'resolveIndexConfig',
      'signNameRecord',
      'signedNameRecordSchema',
      'verifyNameRecord',
    ])
  })
})
