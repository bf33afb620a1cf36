/**
 * The index (amnesia) with one announced provider for `ADDRESS`; `cache.ttlMs` is 1 h, so every
 * resolve after the first is a cache hit (a changed default).
 */
import { serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexService } from '@ron/index'
import type { ServerFactory } from '../../lib/server-child.js'
import { announceTo } from './shared.js'

const start: ServerFactory = async () => {
  const issuer = createTestIssuer()
  const svc = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, cache: { ttlMs: 3_600_000 } })
  const s = await serve(svc)
  await announceTo(issuer, s.url)
  return { url: s.url, close: async () => (await s.close(), await svc.close()) }
}
export default start
