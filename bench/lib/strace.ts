/**
 * What the strace tools print: strace's `-c` summary file as calls and microseconds (in the call)
 * per unit of work (a name write, a commit cycle).
 */
import { readFileSync } from 'node:fs'

/** Prints `summary` (strace `-c -o`) as one line per syscall: calls and µs per `unit`, over `count` units. */
export function printStraceSummary(summary: string, count: number, unit: string): void {
  console.log(`syscall            calls/${unit}   us/${unit} (in the call)`)
  for (const line of readFileSync(summary, 'utf8').split('\n')) {
    // % time, seconds, usecs/call, calls, [errors], syscall
    const m = /^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line)
    if (m === null || m[3] === 'total') continue
    console.log(`${m[3]!.padEnd(18)} ${(Number(m[2]) / count).toFixed(2).padStart(11)} ${((Number(m[1]) * 1e6) / count).toFixed(0).padStart(10)}`)
  }
}
