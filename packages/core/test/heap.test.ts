import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { thrownBy } from '../src/testing/index.js'
import { MalformedError, setHeapGrowingFactor, setYoungGenerationGrowth } from '../src/index.js'

const run = promisify(execFile)
const heapModule = fileURLToPath(new URL('../src/heap.ts', import.meta.url))

/**
 * Runs a child node that applies `factor` through {@link setHeapGrowingFactor}, keeps some live
 * data, forces three full collections and returns the growing factor V8's heap controller
 * reports after each (its `--trace-gc-verbose` lines).
 */
async function factorsAfter(factor: number | 'auto'): Promise<string[]> {
  const script = [
    `const { setHeapGrowingFactor } = await import(${JSON.stringify(heapModule)})`,
    `setHeapGrowingFactor(${JSON.stringify(factor)})`,
    'const keep = Array.from({ length: 100000 }, (_, i) => ({ i }))',
    'for (let k = 0; k < 3; k++) globalThis.gc()',
    'if (keep.length !== 100000) process.exit(3)',
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--expose-gc', '--trace-gc-verbose', '--input-type=module', '-e', script], {
    maxBuffer: 16 * 1024 * 1024,
  })
  return [...stdout.matchAll(/\[HeapController\] Limit: .*\(([\d.]+)\)$/gm)].map((m) => m[1]!)
}

describe('setHeapGrowingFactor', () => {
  it('fixes the factor V8 sizes the old generation with after every full collection', async () => {
    const factors = await factorsAfter(2.5)
    expect(factors.length).toBeGreaterThanOrEqual(3)
    expect(new Set(factors)).toEqual(new Set(['2.5']))
  })

  it('refuses factors outside [1.1, 8] with a typed error naming the field', () => {
    for (const bad of [0, 1, 1.05, 9, Number.NaN, Number.POSITIVE_INFINITY, '4' as unknown as number]) {
      const err = thrownBy(() => setHeapGrowingFactor(bad))
      expect(err, String(bad)).toBeInstanceOf(MalformedError)
      expect((err as MalformedError).details).toEqual({ field: 'factor' })
    }
  })

  it("'auto' hands the decision back to V8", async () => {
    // V8's own estimate moves with the measured speeds; all that is fixed is that it is not pinned.
    const factors = await factorsAfter('auto')
    expect(factors.length).toBeGreaterThanOrEqual(3)
    expect(factors.every((f) => Number(f) >= 1.1 && Number(f) <= 4)).toBe(true)
  })
})

/**
 * Runs a child node that applies `factor` through {@link setYoungGenerationGrowth}, then allocates
 * objects that survive a few scavenges (what makes V8 grow its semi-spaces) and returns the young
 * generation's committed size (`new_space`) in MiB right after applying and after the churn.
 */
async function newSpaceAround(factor: number | 'auto'): Promise<{ before: number; after: number }> {
  const script = [
    "const { getHeapSpaceStatistics } = await import('node:v8')",
    `const { setYoungGenerationGrowth } = await import(${JSON.stringify(heapModule)})`,
    "const size = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20",
    `setYoungGenerationGrowth(${JSON.stringify(factor)})`,
    'const before = size()',
    'let keep = []',
    'for (let i = 0; i < 1e6; i++) { keep.push({ i, a: [i] }); if (keep.length > 50000) keep = [] }',
    'console.log(JSON.stringify({ before, after: size(), kept: keep.length > 0 }))',
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script])
  return JSON.parse(stdout) as { before: number; after: number }
}

describe('setYoungGenerationGrowth', () => {
  it('1 keeps the young generation at its size when applied, where V8 grows it', async () => {
    const fixed = await newSpaceAround(1)
    expect(fixed.after).toBe(fixed.before)
    const auto = await newSpaceAround('auto')
    expect(auto.after).toBeGreaterThan(auto.before)
    expect(auto.after).toBeGreaterThan(fixed.after)
  })

  it('refuses anything but an integer in [1, 8] or "auto" with a typed error naming the field', () => {
    for (const bad of [0, 1.5, 9, -1, Number.NaN, Number.POSITIVE_INFINITY, '1' as unknown as number]) {
      const err = thrownBy(() => setYoungGenerationGrowth(bad))
      expect(err, String(bad)).toBeInstanceOf(MalformedError)
      expect((err as MalformedError).details).toEqual({ field: 'factor' })
    }
  })
})
