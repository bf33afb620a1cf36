/**
 * Results files: every suite `run.ts` runs writes `bench/results/<date>-<commit>-<suite>.json` and
 * a markdown table beside it (`.md`). The harness's `report()` and `printRounds()` record each
 * table they print here; whatever else a suite prints (memory lines, cold-start tables,
 * propagation samples) is kept as its output log. `bench/results/README.md` describes the format.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Median and range of a sample. */
export interface Spread {
  median: number
  min: number
  max: number
}

/** One row of a recorded table: a contender's figure, and its ratio to the table's baseline. */
export interface ResultRow {
  name: string
  /** The figure in the table's unit, over the recorded rounds. */
  value: Spread
  /** Per-round ratio to the baseline (`undefined` on the baseline's own row and where rounds were not paired). */
  ratio?: Spread
}

/** One comparison, as the harness printed it. */
export interface ResultTable {
  title: string
  unit: string
  /** The first contender: every ratio is to it. */
  baseline: string
  /** The baseline's own figure (absolute, in `unit`). */
  baselineValue: Spread
  /** Latencies and costs: a ratio above 1 is slower. */
  lowerIsBetter: boolean
  /** Recorded rounds per contender. */
  rounds: number
  note?: string
  rows: ResultRow[]
}

/** The machine, the code and the conditions of one run. */
export interface RunInfo {
  /** ISO time the suite started. */
  startedAt: string
  /** `git rev-parse --short HEAD`, `-dirty` appended when the tree has changes. */
  commit: string
  node: string
  /** What the server children ran: the built packages or the sources through tsx. */
  code: 'dist' | 'src'
  /** `quick` or `full` (`--full`). */
  mode: 'quick' | 'full'
  /** V8 heap growing factor of the server processes, or `auto` (`RON_BENCH_V8_HEAP=auto`). */
  heapGrowth: string
  /** V8 young-generation growth factor of the server processes, or `auto` (`RON_BENCH_V8_HEAP=auto`, `RON_BENCH_V8_YOUNG=auto`). Absent in older results. */
  youngGrowth?: string
  machine: { cpus: number; model: string; memoryBytes: number; platform: string; arch: string }
}

/** What a results `.json` holds. */
export interface SuiteResult extends RunInfo {
  suite: string
  /** The module, relative to `bench/` (`system/http.bench.ts`). */
  module: string
  seconds: number
  /** 1, 5 and 15 minute load averages when the suite started and when it ended. */
  loadAverage: { start: number[]; end: number[] }
  tables: ResultTable[]
  /** Everything the suite printed, tables included. */
  output: string[]
}

let tables: ResultTable[] | undefined

/** Called by the harness for every table it prints; kept only while a suite is being recorded. */
export function recordTable(t: ResultTable): void {
  tables?.push(t)
}

/** The directory results go to: `bench/results/` (or `RON_BENCH_RESULTS`). */
export const RESULTS_DIR: string = process.env.RON_BENCH_RESULTS ?? fileURLToPath(new URL('../results/', import.meta.url))

/** The commit the bench runs on, `-dirty` when the work tree has changes; `unknown` outside git. */
export function currentCommit(): string {
  try {
    const opts = { cwd: fileURLToPath(new URL('../', import.meta.url)), encoding: 'utf8' as const, stdio: ['ignore', 'pipe', 'ignore'] as ['ignore', 'pipe', 'ignore'] }
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], opts).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], opts).trim() !== ''
    return dirty ? `${head}-dirty` : head
  } catch {
    return 'unknown'
  }
}

/** The machine as `os` sees it. */
export function machine(): RunInfo['machine'] {
  const c = cpus()
  return { cpus: c.length, model: c[0]?.model.trim() ?? 'unknown', memoryBytes: totalmem(), platform: process.platform, arch: process.arch }
}

/**
 * Runs `fn` (one suite's `run()`) while recording its tables and its console output, then writes
 * the suite's `.json` and `.md` to {@link RESULTS_DIR}; returns the two paths.
 */
export async function recordSuite(info: RunInfo, suite: string, module: string, fn: () => Promise<void>): Promise<{ json: string; md: string }> {
  const output: string[] = []
  const log = console.log
  console.log = (...args: unknown[]): void => {
    output.push(args.map((a) => (typeof a === 'string' ? a : String(a))).join(' '))
    log(...args)
  }
  tables = []
  const start = loadavg()
  const t0 = performance.now()
  let result: SuiteResult
  try {
    await fn()
  } finally {
    console.log = log
    result = { ...info, suite, module, seconds: (performance.now() - t0) / 1000, loadAverage: { start, end: loadavg() }, tables, output }
    tables = undefined
  }
  mkdirSync(RESULTS_DIR, { recursive: true })
  const base = join(RESULTS_DIR, `${info.startedAt.replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z')}-${info.commit}-${suite}`)
  writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`)
  writeFileSync(`${base}.md`, toMarkdown(result))
  return { json: `${base}.json`, md: `${base}.md` }
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US')
  return n.toFixed(2)
}

const spreadText = (s: Spread): string => `${fmt(s.median)} [${fmt(s.min)}..${fmt(s.max)}]`
const ratioText = (s: Spread): string => `${s.median.toFixed(2)}x [${s.min.toFixed(2)}..${s.max.toFixed(2)}]`
const cell = (s: string): string => s.replace(/\|/g, '\\|')

/** The markdown of one suite's results: conditions, then one table per comparison, then the output. */
export function toMarkdown(r: SuiteResult): string {
  const gib = (r.machine.memoryBytes / 2 ** 30).toFixed(1)
  const lines = [
    `# ${r.suite} (${r.module}), ${r.startedAt}`,
    '',
    '| | |',
    '|---|---|',
    `| commit | \`${r.commit}\` |`,
    `| code | ${r.code === 'dist' ? 'dist (the built packages)' : 'src (TypeScript sources through tsx: slower than dist)'} |`,
    `| mode | ${r.mode} |`,
    `| node | ${r.node} |`,
    `| machine | ${r.machine.cpus} × ${cell(r.machine.model)}, ${gib} GiB, ${r.machine.platform}/${r.machine.arch} |`,
    `| load average (1/5/15 min) | start ${r.loadAverage.start.map((x) => x.toFixed(2)).join(' ')}, end ${r.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} |`,
    `| server heap | ${r.heapGrowth === 'auto' ? "V8's own sizing (RON_BENCH_V8_HEAP=auto)" : `growing factor ${r.heapGrowth} (ron-node's setting)`}${r.youngGrowth === undefined ? '' : `; young generation growth ${r.youngGrowth === 'auto' ? "V8's own" : `${r.youngGrowth} (ron-node's setting)`}`} |`,
    `| duration | ${r.seconds.toFixed(1)} s |`,
  ]
  for (const t of r.tables) {
    const against = t.lowerIsBetter ? `x of ${t.baseline} (>1 = slower)` : `ratio vs ${t.baseline}`
    lines.push('', `## ${t.title}`, '')
    if (t.note !== undefined) lines.push(t.note, '')
    lines.push(`| case | ${cell(t.unit)}, median [min..max] | ${cell(against)}, median [min..max] | ${cell(t.baseline)} (${cell(t.unit)}) |`, '|---|---:|---:|---:|')
    for (const row of t.rows) {
      lines.push(`| ${cell(row.name)} | ${spreadText(row.value)} | ${row.ratio === undefined ? (row.name === t.baseline ? '1.00x' : '—') : ratioText(row.ratio)} | ${fmt(t.baselineValue.median)} |`)
    }
    lines.push('', `${t.rounds} recorded round${t.rounds === 1 ? '' : 's'} per contender.`)
  }
  lines.push('', '## Output', '', '```', ...r.output, '```', '')
  return lines.join('\n')
}
