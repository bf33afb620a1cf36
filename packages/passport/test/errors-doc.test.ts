import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'

describe('docs/errors.md', () => {
  it("lists every details.reason passport answers with (besides the core verifier's)", async () => {
    const doc = await readFile(new URL('../../../docs/errors.md', import.meta.url), 'utf8')
    const rows = new Set([...doc.matchAll(/^\| `(\w+)` \| `(\w+)` \|/gm)].map((m) => `${m[1]}:${m[2]}`))
    for (const r of ['Forbidden:widen', 'Forbidden:policy', 'Forbidden:missing_scope', 'NotReady:no_policy', 'NotReady:kms_failing', 'NotReady:rotating', 'NotReady:disk_full', 'NotReady:io_error', 'NotReady:read_only', 'Unauthorized:revoked']) {
      expect(rows, r).toContain(r)
    }
  })
})
