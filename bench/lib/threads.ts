/**
 * A process's threads as `/proc` sees them, for the tools that split a server's CPU by thread
 * (`tools/read-cost.ts`, `tools/commit-cost.ts`). Linux only.
 */
import { readFileSync, readdirSync } from 'node:fs'

/** One thread's counters at the time of reading. */
export interface ThreadStat {
  tid: string
  /** Its place among the process's threads by creation order (tids ascend): 0 is the main thread. */
  rank: number
  /** User and system time, clock ticks (10 ms). */
  user: number
  sys: number
  /** Time on the CPU, ns (`schedstat`); read only when asked for. */
  ns: number
  /** Context switches (`status`); read only when asked for. */
  voluntary: number
  involuntary: number
}

/**
 * The threads of `pid` and their counters; a thread that ends while they are read is left out.
 * `detail` also reads each one's `schedstat` and `status` (three files a thread instead of one).
 */
export function readThreads(pid: string, detail = false): ThreadStat[] {
  const tids = readdirSync(`/proc/${pid}/task`).sort((a, b) => Number(a) - Number(b))
  const out: ThreadStat[] = []
  for (const [rank, tid] of tids.entries()) {
    try {
      const base = `/proc/${pid}/task/${tid}`
      const stat = readFileSync(`${base}/stat`, 'utf8')
      // After the command name (which may hold spaces): state is field 0, utime 11, stime 12.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const t: ThreadStat = { tid, rank, user: Number(f[11]), sys: Number(f[12]), ns: 0, voluntary: 0, involuntary: 0 }
      if (detail) {
        const status = readFileSync(`${base}/status`, 'utf8')
        t.ns = Number(readFileSync(`${base}/schedstat`, 'utf8').split(' ')[0])
        t.voluntary = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0)
        t.involuntary = Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0)
      }
      out.push(t)
    } catch {
      // the thread ended
    }
  }
  return out
}
