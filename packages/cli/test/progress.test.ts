import { describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import { createProgress, formatBytes, renderProgress } from '../src/progress.js'

function tty(): { isTTY: boolean; columns: number; out: string[]; write(s: string): boolean } {
  const t = { isTTY: true, columns: 100, out: [] as string[], write: (s: string) => (t.out.push(s), true) }
  return t
}

describe('progress bar', () => {
  it('formats sizes with binary units', () => {
    expect(formatBytes(0)).toBe('0 B')
    expect(formatBytes(1536)).toBe('1.5 KiB')
    expect(formatBytes(10 * 1024 * 1024)).toBe('10.0 MiB')
  })

  it('renders percentage, bytes and rate', () => {
    const line = renderProgress('put', 5 * 1024 * 1024, 10 * 1024 * 1024, 1000, 100)
    expect(line).toMatch(/^put \[#+-+\] {2}50% 5\.0 MiB \/ 10\.0 MiB {2}5\.0 MiB\/s$/)
    expect(renderProgress('put', 2048, undefined, 1000)).toBe('put 2.0 KiB  2.0 KiB/s')
  })

  it('draws nothing when the stream is not a terminal', () => {
    const s = { ...tty(), isTTY: false }
    const p = createProgress({ label: 'get', total: 10, stream: s })
    p.tick(5)
    p.done()
    expect(s.out).toEqual([])
  })

  it('redraws at most once per interval on virtual time and ends the line once', async () => {
    const clock = new VirtualClock(0)
    const s = tty()
    const p = createProgress({ label: 'get', total: 100, stream: s, clock, intervalMs: 100 })
    p.tick(10)
    p.tick(10)
    expect(s.out).toHaveLength(1)
    await clock.advance(100)
    p.tick(10)
    expect(s.out).toHaveLength(2)
    p.done()
    p.done()
    expect(s.out.at(-1)).toBe('\n')
    expect(s.out.at(-2)).toContain(' 30%')
    expect(s.out.filter((x) => x === '\n')).toHaveLength(1)
  })
})
