/**
 * The heap sizing ron-node applies (`setHeapGrowingFactor` and `setYoungGenerationGrowth` in
 * @ron/core, the same flags), for the server children: `RON_BENCH_HEAP_GROWTH` and
 * `RON_BENCH_YOUNG_GROWTH` come from `SERVER_HEAP_GROWTH` and `SERVER_YOUNG_GROWTH` in process.ts.
 * Set here rather than through @ron/core so that a baseline's process does not load it. Applied
 * before the factory module is imported, as `ron-node`'s executable does before it loads the
 * services.
 */
import { setFlagsFromString } from 'node:v8'

export function applyBenchHeapGrowth(): void {
  const growth = process.env.RON_BENCH_HEAP_GROWTH
  if (growth !== undefined && growth !== 'auto') setFlagsFromString(`--heap-growing-percent=${Math.round((Number(growth) - 1) * 100)}`)
  const young = process.env.RON_BENCH_YOUNG_GROWTH
  if (young !== undefined && young !== 'auto') setFlagsFromString(`--semi-space-growth-factor=${Number(young)}`)
}
