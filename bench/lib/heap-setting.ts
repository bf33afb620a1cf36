/**
 * The heap sizing ron-node applies (`setHeapGrowingFactor` in @ron/core, the same formula), for
 * the server children: `RON_BENCH_HEAP_GROWTH` comes from `SERVER_HEAP_GROWTH` in process.ts.
 * Set here rather than through @ron/core so that a baseline's process does not load it.
 */
import { setFlagsFromString } from 'node:v8'

export function applyBenchHeapGrowth(): void {
  const growth = process.env.RON_BENCH_HEAP_GROWTH
  if (growth !== undefined && growth !== 'auto') setFlagsFromString(`--heap-growing-percent=${Math.round((Number(growth) - 1) * 100)}`)
}
