/**
 * Type tests of @ron/index's service factory (the service contract's shape), compiled by
 * `npm run typecheck` (not run by vitest). A widened or broken signature fails to compile.
 */
import { expectTypeOf } from 'vitest'
import type { RonService, ServiceRuntime, Transport } from '@ron/core'
import { createIndexService, type IndexService, type IndexServiceOptions, type IndexRuntime } from '@ron/index'

expectTypeOf(createIndexService).returns.resolves.toEqualTypeOf<IndexService>()
expectTypeOf(createIndexService).parameter(0).toEqualTypeOf<IndexServiceOptions | undefined>()
expectTypeOf(createIndexService).parameter(1).toEqualTypeOf<Transport | undefined>()
expectTypeOf(createIndexService).parameter(2).toEqualTypeOf<IndexRuntime | undefined>()
expectTypeOf<IndexService>().toExtend<RonService>()
expectTypeOf<IndexRuntime>().toExtend<Partial<ServiceRuntime>>()
expectTypeOf<Record<never, never>>().toExtend<IndexServiceOptions>()
// @ts-expect-error a config key the service does not have
void createIndexService({ bogus: true })
