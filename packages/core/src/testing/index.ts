/**
 * `@ron/core/testing`: test doubles that ship with the code. Virtual clock, seeded random,
 * schedule exploration, a test token issuer, memory-transport helpers, a `deferred()` fixture and
 * the golden-test helpers that compare a package's `docs/CONCURRENCY.md` with its topology, and
 * readers of metric values from exposition text (`metricValue`, `metricSamples`, `metricLabelNames`).
 *
 * @example
 * ```ts
 * import { VirtualClock, createTestIssuer, concurrencyDocProblems } from '@ron/core/testing'
 *
 * const clock = new VirtualClock()
 * const issuer = createTestIssuer({ clock })
 * const token = issuer.mint({ scope: 'storage:write' })
 * expect(concurrencyDocProblems(readFileSync('docs/CONCURRENCY.md', 'utf8'), svc.describe())).toEqual([])
 * ```
 *
 * @packageDocumentation
 * @module @ron/core/testing
 */

export { VirtualClock } from './virtual-clock.js'
export { seededRandom, fixedRandom } from './seeded-random.js'
export { exploreSchedules, settleWith } from './schedule.js'
export type { ExploreOptions, Scheduler } from './schedule.js'
export { createTestIssuer, TEST_ISSUER_AUDIENCE } from './test-issuer.js'
export type { TestIssuer, TestIssuerOptions, MintClaims } from './test-issuer.js'
export { memoryNetwork, memoryRequest, patternStream, checkPatternStream } from './memory.js'
export type { PatternCheck } from './memory.js'
export { deferred } from './deferred.js'
export { until } from './until.js'
export { thrownBy } from './thrown-by.js'
export { abortListenerCount } from './abort-listeners.js'
export type { Deferred } from './deferred.js'
export { assertConcurrencyDoc, concurrencyDocProblems, topologyTables, TASKS_HEADER, CHANNELS_HEADER } from '../service/topology-doc.js'
export { metricSamples, metricValue, metricLabelNames } from './metrics.js'
export type { MetricSample } from './metrics.js'
export { mountTmpfs } from './tmpfs.js'
export type { Tmpfs } from './tmpfs.js'
export { tempDir, RecordingMetrics, startOnSocket } from './fixtures.js'
export { runCloseScript, closeScriptChecks } from './close-script.js'
export type { CloseScriptOptions, CloseScriptResult, CloseScriptCheckOptions, CloseScriptCheck } from './close-script.js'
export type { TempDir, ServiceOnSocket } from './fixtures.js'
export { serviceConformance, parseErrorCatalog, parseReadmeMetrics } from './conformance.js'
export type { ConformanceSubject, ConformanceCheck, ConformanceRequest, ReadmeMetric } from './conformance.js'
export { repoRoot, repoPath, readRepoFile } from './repo.js'
