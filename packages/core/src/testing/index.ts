/**
 * `@ron/core/testing`: test doubles that ship with the code. Virtual clock, seeded random,
 * schedule exploration, a test token issuer and memory-transport helpers.
 *
 * @packageDocumentation
 * @module @ron/core/testing
 */

export * from './virtual-clock.js'
export * from './seeded-random.js'
export * from './schedule.js'
export * from './test-issuer.js'
export * from './memory.js'
