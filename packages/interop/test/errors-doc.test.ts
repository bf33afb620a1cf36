/** `docs/errors.md` lists every interop-specific `details.reason` (gateway, webhooks, uploads), under `interop`. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')

describe('docs/errors.md', () => {
  it("lists the gateway's details.reason values", () => {
    const listed = new Set([...doc.matchAll(/^\| interop \| `(\w+)` \| `(\w+)` \|/gm)].map((m) => `${m[1]}:${m[2]}`))
    const answered = [
      'Busy:remote_reads',
      'Unavailable:integrity',
      'OverLimit:gateway_max_object',
      'OverLimit:amnesia',
      'InvalidReference:missing',
      'InvalidReference:too_large',
      'InvalidReference:integrity',
      'InvalidReference:not_a_manifest',
      'NotReady:integrity',
      // Webhooks and uploads without an outgoing service token.
      'NotReady:no_service_token',
    ]
    expect([...listed].sort()).toEqual([...answered].sort())
  })
})
