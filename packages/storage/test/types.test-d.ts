/**
 * Type tests of @ron/storage's public factory and config, compiled by `npm run typecheck` (not
 * run by vitest). A broken generic or a widened return type fails to compile.
 */
import { expectTypeOf } from 'vitest'
import type { z } from 'zod'
import type { RonService, Transport } from '@ron/core'
import { createStorageService, storageConfigSchema, type BlobStore, type StorageConfig, type StorageService, type StorageServiceOptions } from '@ron/storage'
import type { blobStoreCompliance } from '@ron/storage/testing'

expectTypeOf(createStorageService).returns.resolves.toEqualTypeOf<StorageService>()
expectTypeOf(createStorageService).parameter(0).toEqualTypeOf<StorageServiceOptions | undefined>()
expectTypeOf(createStorageService).parameter(1).toEqualTypeOf<Transport | undefined>()
expectTypeOf<StorageService>().toExtend<RonService>()
expectTypeOf<StorageService['store']>().toEqualTypeOf<BlobStore>()
expectTypeOf<StorageConfig>().toEqualTypeOf<z.input<typeof storageConfigSchema>>()
// What a user writes: durations as strings or numbers, everything optional.
expectTypeOf<{ http: { readTimeoutMs: '5s' } }>().toExtend<StorageConfig>()
expectTypeOf<Record<never, never>>().toExtend<StorageConfig>()
// What the service reads: defaults applied, durations parsed to milliseconds.
expectTypeOf<z.output<typeof storageConfigSchema>['http']['readTimeoutMs']>().toEqualTypeOf<number>()
expectTypeOf<z.output<typeof storageConfigSchema>['id']>().toEqualTypeOf<string>()
// @ts-expect-error a config key storage does not have
void createStorageService({ bogus: true })
expectTypeOf<typeof blobStoreCompliance>().toBeFunction()
