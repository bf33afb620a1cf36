/**
 * Names the JIT frames of a callgrind profile: callgrind knows only ELF symbols, so V8's generated
 * code shows as bare addresses (`0x000000000d157d00`). Node's `--perf-basic-prof` writes
 * `/tmp/perf-<pid>.map` (`<start hex> <size hex> <name>` per code object); this rewrites every
 * address-named function of a callgrind file to the code object that holds the address, so
 * `callgrind_annotate --inclusive=yes` shows JavaScript functions.
 *
 *   npx tsx bench/tools/callgrind-names.ts <callgrind file> [perf map]   # writes <file>.named
 *
 * Code objects are collected and their addresses reused; the map keeps every one, and the newest
 * one covering an address wins — good enough for where the time goes, not exact.
 */
import { readFileSync, writeFileSync } from 'node:fs'

interface CodeRange {
  start: number
  end: number
  name: string
}

function readPerfMap(path: string): CodeRange[] {
  const ranges: CodeRange[] = []
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line)
    if (m === null) continue
    const start = parseInt(m[1]!, 16)
    ranges.push({ start, end: start + parseInt(m[2]!, 16), name: m[3]! })
  }
  return ranges
}

/** Rewrites `file` to `<file>.named` with JIT addresses replaced by names; returns the new path. */
export function nameCallgrindFile(file: string, perfMap: string): string {
  const ranges = readPerfMap(perfMap)
  // Newest first: a reused address belongs to the latest code object written there.
  const byStart = ranges.map((r, i) => ({ ...r, i })).sort((a, b) => a.start - b.start)
  const lookup = (addr: number): string | undefined => {
    let lo = 0
    let hi = byStart.length - 1
    let best: (CodeRange & { i: number }) | undefined
    // The last range starting at or before addr, then scan back over overlapping ones.
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (byStart[mid]!.start <= addr) lo = mid + 1
      else hi = mid - 1
    }
    for (let k = hi; k >= 0 && k > hi - 64; k--) {
      const r = byStart[k]!
      if (r.start <= addr && addr < r.end && (best === undefined || r.i > best.i)) best = r
    }
    return best?.name
  }
  const text = readFileSync(file, 'utf8')
  const out = text.replace(/^(c?fn=\(\d+\)) 0x([0-9a-f]+)$/gm, (whole, head: string, hex: string) => {
    const name = lookup(parseInt(hex, 16))
    return name === undefined ? whole : `${head} ${name.replace(/\s+/g, '_')} [0x${hex}]`
  })
  writeFileSync(`${file}.named`, out)
  return `${file}.named`
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  const [file, map] = process.argv.slice(2)
  if (file === undefined) throw new Error('usage: callgrind-names.ts <callgrind file> [perf map]')
  const pid = /\.(\d+)(?:\.\d+)?-\d+$/.exec(file)?.[1]
  const named = nameCallgrindFile(file, map ?? `/tmp/perf-${pid}.map`)
  console.log(named)
}
