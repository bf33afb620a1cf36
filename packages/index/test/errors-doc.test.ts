/** `docs/errors.md` lists every `details.reason` the index answers with, under `index`. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ANNOUNCE_REFUSALS } from '../src/index.js'

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')

describe('docs/errors.md', () => {
  it("lists the index's details.reason values", () => {
    const listed = new Set([...doc.matchAll(/^\| index \| `(\w+)` \| `(\w+)` \|/gm)].map((m) => `${m[1]}:${m[2]}`))
    const answered = [
      'Malformed:reserved',
      'Malformed:bad_endpoint',
      ...ANNOUNCE_REFUSALS.filter((r) => r !== 'bad_endpoint').map((r) => `Forbidden:${r}`),
      'Forbidden:caveat',
      'NotFound:deleted',
      'NotFound:not_found',
      'NotFound:negative_cache',
      'NotFound:not_local',
      'Conflict:home_elsewhere',
      'InvalidReference:missing',
      'InvalidReference:too_large',
      'InvalidReference:integrity',
      'InvalidReference:not_a_manifest',
      'NotReady:storage_busy',
      'NotReady:storage_error',
      'Unavailable:peers_unavailable',
      'BreakerOpen:breakers_open',
      'Busy:idempotency_keys',
      'Busy:pins',
      'Busy:provider_set_full',
      'Busy:provider_table_full',
    ]
    expect([...listed].sort()).toEqual([...answered].sort())
  })
})
