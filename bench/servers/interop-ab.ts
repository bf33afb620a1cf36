/**
 * A/B factory: the bench's interop server (`mode: 'interop'` of interop.bench.ts: storage and a
 * passport stand-in in process) built from the interop bundle in the directory `options.dist` (a
 * copy of `packages/interop/dist` taken before a change), or from the current build when absent.
 * Keep the copy at the same depth inside the workspace (e.g. `packages/interop/.ab/before`, not
 * committed): a copy elsewhere resolves and loads differently and measured slower for nothing.
 * `options.ring` sets `audit.memoryCapacity`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryTransport, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '@ron/storage'
import type { ServerFactory } from '../server-child.js'
import { passportStandIn } from './passport-stand-in.js'

const start: ServerFactory = async (options) => {
  const mod = (typeof options.dist === 'string' ? await import(`${options.dist}/index.js`) : await import('@ron/interop')) as typeof import('@ron/interop')
  const dir = mkdtempSync(join(tmpdir(), 'ron-bench-interop-ab-'))
  const issuer = createTestIssuer()
  const storage = await createStorageService({ dataDir: dir, auth: { keys: issuer.keys } })
  const token = issuer.mint({ scope: ['storage:write', 'passport:issue'], aud: ['storage', 'passport'], ttlSec: 86_400 })
  const passport = passportStandIn(issuer)
  const transport = new MemoryTransport()
  transport.mount('storage', storage)
  transport.mount('passport', passport)
  const interop = await mod.createInteropService(
    { webhooks: { providers: { github: { secrets: ['bench-webhook-secret'] } } }, apiKeys: [{ client: 'bench', keyHash: mod.hashApiKey('bench-api-key-0123456789') }], rateLimit: false, brownout: { enabled: false }, ...(typeof options.ring === 'number' ? { audit: { memoryCapacity: options.ring } } : {}) },
    transport,
    { tokens: token },
  )
  const server = await serve(interop, { port: 0 })
  return {
    url: server.url,
    close: async () => {
      await server.close()
      await interop.close()
      await storage.close()
      await transport.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
export default start
