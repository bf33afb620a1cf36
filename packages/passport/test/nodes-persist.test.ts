import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateIssuerKey } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createPassportService, type PassportService } from '../src/index.js'
import { NodeRegistry } from '../src/nodes.js'
import { ADMIN_POLICY, T0 } from './helpers.js'

describe('enrolled nodes on disk', () => {
  it('concurrent enrolments all succeed and all survive a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'passport-'))
    const clock = new VirtualClock(T0)
    let p: PassportService | undefined
    try {
      const nodes = await NodeRegistry.open(clock, dir)
      const ids = Array.from({ length: 8 }, (_, i) => `n${i}`)
      const results = await Promise.allSettled(ids.map((nodeId) => nodes.enrol({ nodeId, publicJwk: { x: generateIssuerKey({ kid: nodeId }).publicJwk.x }, scopes: ['index:announce'], audiences: ['*'] })))
      expect(results.filter((r) => r.status === 'rejected')).toEqual([])
      const again = await NodeRegistry.open(clock, dir)
      expect(again.list().map((n) => n.nodeId).sort()).toEqual(ids)
      // And through the service: the same file is what a restarted passport loads.
      p = await createPassportService({ clock, drainReadWindowMs: 0, dataDir: dir, policy: ADMIN_POLICY })
    } finally {
      await p?.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
