import { afterEach, describe, expect, it } from 'vitest'
import type { DispatchTarget, RonResponse } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { addr, addressAnswer, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

const CHUNK = 64 * 1024

/** A peer that answers 200 with `total` bytes of body (never valid JSON), counting what is pulled. */
function endlessPeer(total: number, declare = false): DispatchTarget & { pulled: number; finished: boolean } {
  const peer = {
    pulled: 0,
    finished: false,
    dispatch(): Promise<RonResponse> {
      const chunk = new Uint8Array(CHUNK).fill(0x20)
      return Promise.resolve({
        status: 200,
        headers: { 'content-type': 'application/json', ...(declare ? { 'content-length': String(total) } : {}) },
        body: (async function* () {
          try {
            for (let sent = 0; sent < total; sent += CHUNK) {
              peer.pulled += CHUNK
              yield chunk
            }
          } finally {
            peer.finished = true
          }
        })(),
      })
    },
  }
  return peer
}

describe('peer answers are read within a bound', () => {
  it('a peer streaming an oversized answer is cut off at the cap and counted as failed; the resolve goes on', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1', 'peer-2'], alpha: 1, beta: 1, hedgeMs: 1_000 } }, { clock })
    const big = endlessPeer(64 * 1024 * 1024)
    env.transport.mount('peer-1', big)
    const a = addr('big')
    env.transport.mount('peer-2', {
      dispatch: () => {
        const bytes = new TextEncoder().encode(JSON.stringify(addressAnswer(a, ['node-ok'])))
        return Promise.resolve({ status: 200, headers: { 'content-type': 'application/json' }, body: (async function* () { yield bytes })() })
      },
    })
    const r = await env.anon.resolve(a)
    expect(r.providers.map((p) => p.node)).toEqual(['node-ok'])
    // At most the cap (5 MiB: a 2 MiB manifest text escaped, plus providers) and one chunk were
    // pulled from the oversized body, and it was closed.
    expect(big.pulled).toBeLessThanOrEqual(5 * 1024 * 1024 + CHUNK)
    expect(big.finished).toBe(true)
  })

  it('a declared Content-Length over the cap is refused without reading the body', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] } }, { clock })
    const big = endlessPeer(16 * 1024 * 1024, true)
    env.transport.mount('peer-1', big)
    await expect(env.anon.resolve(addr('declared'))).rejects.toMatchObject({ code: 'Unavailable' })
    expect(big.pulled).toBe(0)
  })
})
