/**
 * Type tests of @ron/passport's service factory (the service contract's shape), compiled by
 * `npm run typecheck` (not run by vitest). A widened or broken signature fails to compile.
 */
import { expectTypeOf } from 'vitest'
import type { RonService, ServiceRuntime, Transport } from '@ron/core'
import { createPassportService, type PassportService, type PassportServiceOptions, type PassportRuntime } from '@ron/passport'

expectTypeOf(createPassportService).returns.resolves.toEqualTypeOf<PassportService>()
expectTypeOf(createPassportService).parameter(0).toEqualTypeOf<PassportServiceOptions | undefined>()
expectTypeOf(createPassportService).parameter(1).toEqualTypeOf<Transport | undefined>()
expectTypeOf(createPassportService).parameter(2).toEqualTypeOf<PassportRuntime | undefined>()
expectTypeOf<PassportService>().toExtend<RonService>()
expectTypeOf<PassportRuntime>().toExtend<Partial<ServiceRuntime>>()
expectTypeOf<Record<never, never>>().toExtend<PassportServiceOptions>()
// @ts-expect-error a config key the service does not have
void createPassportService({ bogus: true })
