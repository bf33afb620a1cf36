/**
 * The public surface of `@ron/index` as a reviewed artefact: a change to the exported (runtime)
 * names is a visible diff here. Types are listed in `src/index.ts`, explicitly.
 */
import { describe, expect, it } from 'vitest'
import * as index from '@ron/index'

describe('exported names', () => {
  it('@ron/index', () => {
    expect(Object.keys(index).sort()).toEqual([
      'CHANNELS',
      'DEFAULT_PROVIDER_LIMIT',
      'DEFAULT_RESOLVER_WORKERS',
      'IMMUTABLE_PATHS',
      'INDEX_METRIC_NAMES',
      'MAX_PROVIDER_LIMIT',
      'PEER_HEADER',
      'RESERVED_TLDS',
      'ROUTES',
      'SERVICE_ID',
      'TASKS',
      'checkName',
      'createIndexClient',
      'createIndexService',
      'createMemoryNameStore',
      'hedgedLookup',
      'indexConfigSchema',
      'indexTopology',
      'isReservedName',
      'openLmdbNameStore',
      'parseKey',
      'resolveIndexConfig',
    ])
  })
})
