/**
 * The benchmark harness. Two kinds of measurement, both always beside a baseline and reported as
 * ratios:
 *
 * - in-process micro benchmarks (`compare`/`report`): CPU-bound functions (hashing, token checks,
 *   queue hand-offs) next to their peer library, alternating rounds in one process;
 * - out-of-process system benchmarks (`alternate`/`printRounds` with `spawnServer`/`spawnLoad`
 *   from `process.ts`): every server and the load generator in its own process, contenders
 *   alternating within each round, median and [min..max] of the per-round ratios.
 *
 * See `bench/README.md` for how to add a case.
 */
import { readFileSync } from 'node:fs'
import { recordTable, type Spread } from './results.js'

export type { Spread } from './results.js'

export interface Case {
  name: string
  /** One operation; may be async. Return value is ignored. */
  fn: () => unknown
}

export interface Measured {
  name: string
  /** The median over the recorded rounds. */
  opsPerSec: number
  /** Every recorded round's figure, in round order (paired with the other cases' rounds). */
  samples?: number[]
}

async function timeRound(c: Case, ops: number): Promise<number> {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < ops; i++) {
    const r = c.fn()
    if (r instanceof Promise) await r
  }
  return Number(process.hrtime.bigint() - t0) / 1e9
}

/**
 * Runs `baseline` and each case for `rounds` alternating rounds of `ops` operations, after one
 * warm-up round each; returns the median ops/s of each.
 */
export async function compare(baseline: Case, cases: Case[], opts: { ops: number; rounds?: number }): Promise<Measured[]> {
  const rounds = opts.rounds ?? 5
  const all = [baseline, ...cases]
  for (const c of all) await timeRound(c, Math.max(1, Math.floor(opts.ops / 10)))
  const samples = all.map(() => [] as number[])
  for (let r = 0; r < rounds; r++) {
    for (const [i, c] of all.entries()) samples[i]!.push(opts.ops / (await timeRound(c, opts.ops)))
  }
  return all.map((c, i) => ({ name: c.name, opsPerSec: median(samples[i]!), samples: samples[i]! }))
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/**
 * Prints a table: name, ops/s (or a custom unit) as the median [min..max] of the rounds, and the
 * median [min..max] of the per-round ratios to the first row; records it for the results files.
 */
export function report(title: string, rows: Measured[], unit = 'ops/s'): void {
  const base = rows[0]!
  const value = (r: Measured): Spread => (r.samples === undefined ? { median: r.opsPerSec, min: r.opsPerSec, max: r.opsPerSec } : spread(r.samples))
  const ratio = (r: Measured): Spread =>
    r.samples !== undefined && base.samples !== undefined && r.samples.length === base.samples.length
      ? spread(r.samples.map((v, i) => v / base.samples![i]!))
      : { median: r.opsPerSec / base.opsPerSec, min: r.opsPerSec / base.opsPerSec, max: r.opsPerSec / base.opsPerSec }
  console.log(`\n## ${title}`)
  console.log(`${'case'.padEnd(48)} ${unit.padStart(14)}  ratio vs ${base.name}, median [min..max] of rounds`)
  for (const r of rows) {
    const q = ratio(r)
    const text = r === base ? '1.00x' : q.min === q.max ? `${q.median.toFixed(2)}x` : `${q.median.toFixed(2)}x [${q.min.toFixed(2)}..${q.max.toFixed(2)}]`
    console.log(`${r.name.padEnd(48)} ${fmt(r.opsPerSec).padStart(14)}  ${text}`)
  }
  recordTable({
    title,
    unit,
    baseline: base.name,
    baselineValue: value(base),
    lowerIsBetter: false,
    rounds: base.samples?.length ?? 1,
    rows: rows.map((r) => ({ name: r.name, value: value(r), ...(r === base ? {} : { ratio: ratio(r) }) })),
  })
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2)
}

// ---------------------------------------------------------------------------------------------
// Out-of-process rounds (see process.ts): alternate contenders within each round, then report
// the median and [min..max] of per-round ratios to the baseline.

/** `--full` on the command line (or `RON_BENCH_FULL=1`): longer runs, bigger objects, soak. */
export const FULL = process.argv.includes('--full') || process.env.RON_BENCH_FULL === '1'

/** One side of a comparison: `measure()` runs one round and returns its figure. */
export interface Contender<T = number> {
  name: string
  measure(): Promise<T>
}

/**
 * Runs `warmup` unrecorded rounds, then `rounds` recorded ones; within a round every contender
 * runs once, and the order rotates from round to round so drift and "who goes first" fall on
 * every side alike. Returns `samples[contender][round]`.
 */
export async function alternate<T>(contenders: Contender<T>[], opts: { rounds: number; warmup?: number }): Promise<T[][]> {
  const samples = contenders.map(() => [] as T[])
  const total = (opts.warmup ?? 1) + opts.rounds
  for (let r = 0; r < total; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + r) % contenders.length
      const v = await contenders[i]!.measure()
      if (r >= total - opts.rounds) samples[i]!.push(v)
    }
  }
  return samples
}

export function spread(xs: number[]): Spread {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }
}

/** Per-round ratios `samples[i][r] / samples[base][r]`, summarised. */
export function ratios(samples: number[][], i: number, base = 0): Spread {
  return spread(samples[i]!.map((v, r) => v / samples[base]![r]!))
}

/**
 * Prints one comparison: each contender's median figure, and its per-round ratio to the first
 * contender as `median [min..max]`. `lowerIsBetter` (latencies) prints the ratio as "× slower".
 */
export function printRounds(title: string, unit: string, names: string[], samples: number[][], opts: { lowerIsBetter?: boolean; note?: string } = {}): void {
  console.log(`\n## ${title}`)
  if (opts.note !== undefined) console.log(opts.note)
  const rounds = samples[0]!.length
  const label = opts.lowerIsBetter === true ? `x of ${names[0]} (>1 = slower)` : `ratio vs ${names[0]}`
  console.log(`${'case'.padEnd(44)} ${unit.padStart(12)}  ${label}, median [min..max] of ${rounds} rounds`)
  for (const [i, name] of names.entries()) {
    const s = spread(samples[i]!)
    const r = ratios(samples, i)
    const ratio = i === 0 ? '1.00x' : `${r.median.toFixed(2)}x [${r.min.toFixed(2)}..${r.max.toFixed(2)}]`
    console.log(`${name.padEnd(44)} ${fmt(s.median).padStart(12)}  ${ratio}`)
  }
  recordTable({
    title,
    unit,
    baseline: names[0]!,
    baselineValue: spread(samples[0]!),
    lowerIsBetter: opts.lowerIsBetter === true,
    rounds,
    ...(opts.note === undefined ? {} : { note: opts.note }),
    rows: names.map((name, i) => ({ name, value: spread(samples[i]!), ...(i === 0 ? {} : { ratio: ratios(samples, i) }) })),
  })
}

/** User + system CPU time of a process in ms, from `/proc/<pid>/stat`; `undefined` where there is no /proc. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    // utime and stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return undefined
  }
}

/**
 * Server CPU per request, beside a request-rate figure: the load generator shares the cores, so a
 * server with idle CPU is client-limited and req/s alone mixes the two. Wrap each contender's
 * measurement in {@link CpuPerRequest.around}; {@link CpuPerRequest.print} prints the recorded
 * rounds (the warm-up round is dropped). Linux only (/proc); prints nothing elsewhere.
 */
export class CpuPerRequest {
  readonly #samples: number[][]

  constructor(contenders: number) {
    this.#samples = Array.from({ length: contenders }, () => [])
  }

  /** Runs `measure` for contender `i` (server process `pid`) and records its CPU µs per request. */
  async around<T>(i: number, pid: number, measure: () => Promise<T>, requests: (r: T) => number): Promise<T> {
    const c0 = processCpuMs(pid)
    const r = await measure()
    const c1 = processCpuMs(pid)
    const n = requests(r)
    if (c0 !== undefined && c1 !== undefined && n > 0) this.#samples[i]!.push(((c1 - c0) * 1000) / n)
    return r
  }

  print(title: string, names: string[], rounds: number): void {
    if (!this.#samples.every((c) => c.length >= rounds)) return
    printRounds(`${title}, server CPU per request (user + system)`, 'us/req', names, this.#samples.map((c) => c.slice(-rounds)), {
      lowerIsBetter: true,
      note: 'from /proc/<pid>/stat over each round above (clock ticks of 10 ms, so coarse for short rounds).',
    })
  }
}
