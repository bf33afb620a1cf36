/**
 * A one-line progress bar for `put` and `get`, drawn on stderr only when it is a terminal.
 *
 * @module
 */

import { systemClock, type Clock } from '@ron/core/client'

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Total bytes when known (a file), undefined for a stream of unknown length (stdin). */
  total?: number
  /** Label before the bar, e.g. `put` or `get`. */
  label: string
  /** Where to draw. @default process.stderr */
  stream?: NodeJS.WriteStream | { isTTY?: boolean; columns?: number; write(s: string): boolean }
  /** Draw even if the stream is not a TTY (tests). @default stream.isTTY */
  enabled?: boolean
  /** Minimum time between redraws in ms. @default 100 */
  intervalMs?: number
  /** @default systemClock */
  clock?: Clock
}

/** A progress reporter; all methods are no-ops when disabled. */
export interface Progress {
  /** Adds `n` transferred bytes and redraws if the interval passed. */
  tick(n: number): void
  /** Draws the final state and ends the line. Idempotent. */
  done(): void
  /** Erases the line (on failure). Idempotent. */
  clear(): void
}

/** Formats a byte count with binary units: `1.5 MiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`
}

/** Renders one line of progress; exported for tests. */
export function renderProgress(label: string, done: number, total: number | undefined, elapsedMs: number, width = 80): string {
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0
  const tail = `${formatBytes(done)}${total !== undefined ? ` / ${formatBytes(total)}` : ''}  ${formatBytes(Math.round(rate))}/s`
  if (total === undefined || total === 0) return `${label} ${tail}`
  const frac = Math.min(1, done / total)
  const pct = `${Math.floor(frac * 100)}`.padStart(3)
  const barWidth = Math.max(10, Math.min(40, width - label.length - tail.length - 12))
  const filled = Math.round(frac * barWidth)
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}] ${pct}% ${tail}`
}

/**
 * Creates a progress reporter. Disabled (every call a no-op) unless the stream is a TTY or
 * `enabled` is set, so piped output and logs stay clean.
 */
export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr
  const enabled = options.enabled ?? stream.isTTY === true
  const noop: Progress = { tick() {}, done() {}, clear() {} }
  if (!enabled) return noop
  const clock = options.clock ?? systemClock
  const interval = options.intervalMs ?? 100
  const started = clock.now()
  let bytes = 0
  let lastDraw = -Infinity
  let finished = false
  const draw = (): void => {
    const line = renderProgress(options.label, bytes, options.total, clock.now() - started, stream.columns ?? 80)
    stream.write(`\r${line}\x1b[K`)
  }
  return {
    tick(n) {
      if (finished) return
      bytes += n
      const now = clock.now()
      if (now - lastDraw >= interval) {
        lastDraw = now
        draw()
      }
    },
    done() {
      if (finished) return
      finished = true
      draw()
      stream.write('\n')
    },
    clear() {
      if (finished) return
      finished = true
      stream.write('\r\x1b[K')
    },
  }
}
