/**
 * Reading V8 CPU profiles (`.cpuprofile`) taken from a server child (`profStart()`/`profStop()` of
 * {@link spawnServer}): self time and inclusive time per function, in percent of all samples.
 */
import { readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
export interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** Self time per function (name + file:line), in percent of all samples. */
export function topSelf(p: Profile, n = 25): Array<{ pct: number; fn: string }> {
  const byId = new Map(p.nodes.map((x) => [x.id, x]))
  const counts = new Map<string, number>()
  for (const id of p.samples) {
    const f = byId.get(id)!.callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${f.lineNumber + 1}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  const total = p.samples.length
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([fn, c]) => ({ pct: (100 * c) / total, fn }))
}


/** Inclusive time per function (itself and everything it called), in percent of all samples. */
export function topTotal(p: Profile, n = 25): Array<{ pct: number; fn: string }> {
  const byId = new Map(p.nodes.map((x) => [x.id, x]))
  const parent = new Map<number, number>()
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id)
  const key = (x: ProfileNode): string => `${x.callFrame.functionName || '(anonymous)'} ${x.callFrame.url.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${x.callFrame.lineNumber + 1}`
  const counts = new Map<string, number>()
  for (const id of p.samples) {
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(byId.get(cur)!)
      if (!seen.has(k)) {
        seen.add(k)
        counts.set(k, (counts.get(k) ?? 0) + 1)
      }
    }
  }
  const total = p.samples.length
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([fn, c]) => ({ pct: (100 * c) / total, fn }))
}

/** Reads a `.cpuprofile` written by `profStop()`. */
export function readProfile(file: string): Profile {
  return JSON.parse(readFileSync(file, 'utf8')) as Profile
}

/** Prints the profile's path, then its top self-time and inclusive-time functions. */
export function printProfile(file: string, p: Profile = readProfile(file), rows: { self?: number; total?: number } = {}): void {
  console.log(`profile ${file}`)
  console.log('self time:')
  for (const row of topSelf(p, rows.self ?? 30)) console.log(`${row.pct.toFixed(1).padStart(5)}%  ${row.fn}`)
  console.log('inclusive time:')
  for (const row of topTotal(p, rows.total ?? 50)) console.log(`${row.pct.toFixed(1).padStart(5)}%  ${row.fn}`)
}

/** Where the profile tools leave their `.cpuprofile` files: `$TMPDIR/ron-profiles/` (created). */
export async function profileDir(): Promise<string> {
  const dir = join(tmpdir(), 'ron-profiles')
  await mkdir(dir, { recursive: true })
  return dir
}
