/**
 * Type tests of @ron/interop's service factory (the service contract's shape), compiled by
 * `npm run typecheck` (not run by vitest). A widened or broken signature fails to compile.
 */
import { expectTypeOf } from 'vitest'
import type { RonService, ServiceRuntime, Transport } from '@ron/core'
import { createInteropService, type InteropService, type InteropConfigInput, type InteropRuntime } from '@ron/interop'

expectTypeOf(createInteropService).returns.resolves.toEqualTypeOf<InteropService>()
expectTypeOf(createInteropService).parameter(0).toEqualTypeOf<InteropConfigInput | undefined>()
expectTypeOf(createInteropService).parameter(1).toEqualTypeOf<Transport | undefined>()
expectTypeOf(createInteropService).parameter(2).toEqualTypeOf<InteropRuntime | undefined>()
expectTypeOf<InteropService>().toExtend<RonService>()
expectTypeOf<InteropRuntime>().toExtend<Partial<ServiceRuntime>>()
expectTypeOf<Record<never, never>>().toExtend<InteropConfigInput>()
// @ts-expect-error a config key the service does not have
void createInteropService({ bogus: true })
