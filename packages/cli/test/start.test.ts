import { describe, expect, it } from 'vitest'
import { startCommand, type StartIo } from '../src/actions/start.js'

/** An injected process for `startCommand`: records the heap settings, stops the node once it is ready. */
function fakeProcess(env: Record<string, string | undefined>): StartIo & { heap: (number | 'auto')[]; young: (number | 'auto')[]; printed: () => string } {
  let handler: ((s: NodeJS.Signals) => void) | undefined
  let text = ''
  const heap: (number | 'auto')[] = []
  const young: (number | 'auto')[] = []
  const stdout = {
    write(s: string | Uint8Array) {
      text += typeof s === 'string' ? s : Buffer.from(s).toString()
      // The summary is printed once the node is ready: stop it as a user's Ctrl+C would.
      if (text.includes('Press Ctrl+C to stop.')) queueMicrotask(() => handler?.('SIGINT'))
      return true
    },
  } as unknown as NodeJS.WritableStream
  return {
    stdout,
    env,
    heap,
    young,
    printed: () => text,
    onSignal(h) {
      handler = h
      return () => {
        handler = undefined
      }
    },
    tuneHeap(factor) {
      heap.push(factor)
    },
    tuneYoungGen(factor) {
      young.push(factor)
    },
  }
}

describe('ron-node start', () => {
  it('applies the heap settings of its config before the node starts', async () => {
    const io = fakeProcess({ RON_LOG_LEVEL: 'silent' })
    const code = await startCommand({ flags: { amnesia: true, portBase: '0', services: 'storage' } }, io)
    expect(code).toBe(0)
    expect(io.printed()).toContain('is ready')
    expect(io.heap).toEqual([4])
    expect(io.young).toEqual([1])

    const auto = fakeProcess({ RON_LOG_LEVEL: 'silent', RON_HEAP_GROWTH: 'auto', RON_YOUNG_GEN_GROWTH: 'auto' })
    expect(await startCommand({ flags: { amnesia: true, portBase: '0', services: 'storage' } }, auto)).toBe(0)
    expect(auto.heap).toEqual(['auto'])
    expect(auto.young).toEqual(['auto'])
  })
})
