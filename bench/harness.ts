/**
 * Minimal side-by-side benchmark harness: every measurement runs next to its baseline in the same
 * process, alternating rounds so drift affects both, and is reported as a ratio.
 */

export interface Case {
  name: string
  /** One operation; may be async. Return value is ignored. */
  fn: () => unknown
}

export interface Measured {
  name: string
  opsPerSec: number
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
  return all.map((c, i) => ({ name: c.name, opsPerSec: median(samples[i]!) }))
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Prints a table: name, ops/s (or a custom unit), ratio to the first row. */
export function report(title: string, rows: Measured[], unit = 'ops/s'): void {
  const base = rows[0]!.opsPerSec
  console.log(`\n## ${title}`)
  console.log(`${'case'.padEnd(48)} ${unit.padStart(14)}  ratio vs ${rows[0]!.name}`)
  for (const r of rows) {
    console.log(`${r.name.padEnd(48)} ${fmt(r.opsPerSec).padStart(14)}  ${(r.opsPerSec / base).toFixed(2)}x`)
  }
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2)
}
