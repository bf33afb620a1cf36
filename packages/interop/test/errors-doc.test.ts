/** `docs/errors.md` lists every interop-specific `details.reason` (gateway, webhooks, uploads), under `interop`. */
import { describe, expect, it } from 'vitest'
import { readRepoFile } from '@ron/core/testing'

const doc = readRepoFile('docs/errors.md')

describe('docs/errors.md', () => {
  it("lists the details.reason values of the gateway, webhooks and uploads", () => {
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
      // Webhook signatures, the rate limit, uploads per client.
      'Unauthorized:bad_signature',
      'Unauthorized:stale_timestamp',
      'Unauthorized:missing_header',
      'Busy:rate_limit',
      'Busy:per_client',
    ]
    expect([...listed].sort()).toEqual([...answered].sort())
  })
})
