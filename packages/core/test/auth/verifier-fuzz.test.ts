import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createTokenVerifier, generateIssuerKey, signToken, staticKeySource } from '../../src/auth/index.js'
import { isRonError } from '../../src/errors.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'

const clock = new VirtualClock(1_800_000_000_000)
const key = generateIssuerKey()
const verifier = createTokenVerifier({ keys: staticKeySource([key]), clock })
const token = signToken(key, { sub: 's', aud: 'storage', scope: 'storage:write', ttlSec: 600, jti: 'j' }, { clock })
const need = { audience: 'storage', scope: 'storage:write' }
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ '

async function outcome(t: string): Promise<string> {
  try {
    await verifier.verify(t, need)
    return 'ok'
  } catch (e) {
    if (!isRonError(e)) throw e
    expect(['Unauthorized', 'Forbidden']).toContain(e.code)
    return String(e.details['reason'])
  }
}

describe('token verifier under mutation', () => {
  it('accepts the original token', async () => {
    expect(await outcome(token)).toBe('ok')
  })

  it('every single-character change is refused with a typed reason, never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: token.length - 1 }), fc.constantFrom(...ALPHABET), async (i, c) => {
        const mutated = token.slice(0, i) + c + token.slice(i + 1)
        fc.pre(mutated !== token)
        expect(await outcome(mutated)).not.toBe('ok')
      }),
      { numRuns: 400, seed: 3 },
    )
  })

  it('arbitrary strings and truncations are refused with a typed reason', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 300 }), fc.nat({ max: token.length - 1 }).map((n) => token.slice(0, n))), async (s) => {
        expect(await outcome(s)).not.toBe('ok')
      }),
      { numRuns: 300, seed: 4 },
    )
  })
})
