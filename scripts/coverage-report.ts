// Prints the coverage of each package (the sum over its `src/` files) from the json-summary
// that `vitest run --coverage` writes to coverage/coverage-summary.json, beside each package's
// floor from vitest.config.ts (`coverage.thresholds`, where vitest enforces them).
//
// Usage: `tsx scripts/coverage-report.ts [coverage/coverage-summary.json]` (`.ci/run` runs it
// after the tests; the floors fail `npm test` itself).

import { readFileSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import process from 'node:process'
import config from '../vitest.config.js'

type Metric = 'lines' | 'statements' | 'functions' | 'branches'
const METRICS: Metric[] = ['lines', 'statements', 'functions', 'branches']
type Summary = Record<string, Record<Metric, { total: number; covered: number }>>

const root = resolve(import.meta.dirname, '..')
const file = resolve(root, process.argv[2] ?? 'coverage/coverage-summary.json')
const summary = JSON.parse(readFileSync(file, 'utf8')) as Summary

const totals = new Map<string, Record<Metric, { total: number; covered: number }>>()
for (const [path, counts] of Object.entries(summary)) {
  if (path === 'total') continue
  const pkg = /^packages\/([^/]+)\/src\//.exec(relative(root, path))?.[1]
  if (pkg === undefined) continue
  const t = totals.get(pkg) ?? { lines: { total: 0, covered: 0 }, statements: { total: 0, covered: 0 }, functions: { total: 0, covered: 0 }, branches: { total: 0, covered: 0 } }
  for (const m of METRICS) {
    t[m].total += counts[m].total
    t[m].covered += counts[m].covered
  }
  totals.set(pkg, t)
}

const thresholds = (config.test?.coverage as { thresholds?: Record<string, Partial<Record<Metric, number>>> } | undefined)?.thresholds ?? {}
const pct = (c: { total: number; covered: number }): string => (c.total === 0 ? '100.0' : ((100 * c.covered) / c.total).toFixed(1))
const rows = [['package', ...METRICS.map((m) => `${m} (floor)`)]]
for (const [pkg, t] of [...totals].sort(([a], [b]) => a.localeCompare(b))) {
  const floor = thresholds[`packages/${pkg}/src/**`] ?? {}
  rows.push([pkg, ...METRICS.map((m) => `${pct(t[m])}% (${floor[m] ?? '-'})`)])
}
const all = summary['total']
if (all !== undefined) rows.push(['all', ...METRICS.map((m) => `${pct(all[m])}%`)])
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`)
