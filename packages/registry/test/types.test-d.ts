/**
 * Type tests of @ron/registry's service factory (the service contract's shape), compiled by
 * `npm run typecheck` (not run by vitest). A widened or broken signature fails to compile.
 */
import { expectTypeOf } from 'vitest'
import type { RonService, ServiceRuntime, Transport } from '@ron/core'
import { createRegistryService, type RegistryService, type RegistryServiceConfig, type RegistryRuntime } from '@ron/registry'

expectTypeOf(createRegistryService).returns.resolves.toEqualTypeOf<RegistryService>()
expectTypeOf(createRegistryService).parameter(0).toEqualTypeOf<RegistryServiceConfig | undefined>()
expectTypeOf(createRegistryService).parameter(1).toEqualTypeOf<Transport | undefined>()
expectTypeOf(createRegistryService).parameter(2).toEqualTypeOf<RegistryRuntime | undefined>()
expectTypeOf<RegistryService>().toExtend<RonService>()
expectTypeOf<RegistryRuntime>().toExtend<Partial<ServiceRuntime>>()
expectTypeOf<Record<never, never>>().toExtend<RegistryServiceConfig>()
// @ts-expect-error a config key the service does not have
void createRegistryService({ bogus: true })
