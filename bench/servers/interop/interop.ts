/**
 * Interop with its own filesystem storage (MemoryTransport, same process) and a passport stand-in;
 * `rateLimit: false` (the default 500 rps would measure the limiter) and brownout off, the only
 * defaults changed.
 *
 * For back-to-back A/B runs: `options.dist` names a copy of `packages/interop/dist` taken before a
 * change (keep it at the same depth inside the workspace, e.g. `packages/interop/.ab/before`, not
 * committed: a copy elsewhere resolves and loads differently and measured slower for nothing), and
 * `options.ring` sets `audit.memoryCapacity`.
 */
import { rmSync } from 'node:fs'
import { MemoryTransport, serve } from '@ron/core'
import { createInteropService, hashApiKey, toServiceTokens } from '@ron/interop'
import type { ServerFactory } from '../../lib/server-child.js'
import { passportStandIn } from '../passport/stand-in.js'
import { API_KEY, SECRET, fsStorage } from './shared.js'

const start: ServerFactory = async (options) => {
  const { dir, issuer, storage, token } = await fsStorage()
  // A passport stand-in: mints the requested capability with the same issuer storage trusts.
  const passport = passportStandIn(issuer)
  const transport = new MemoryTransport()
  transport.mount('storage', storage)
  transport.mount('passport', passport)
  const mod = typeof options.dist === 'string' ? ((await import(`${options.dist}/index.js`)) as typeof import('@ron/interop')) : { createInteropService, hashApiKey }
  const interop = await mod.createInteropService(
    // Brownout off: fsync-bound storage on a loaded box can push the upstream p95 past 500 ms, and
    // a shed (503) round would abort the measurement; shedding is tested, not benchmarked.
    {
      webhooks: { providers: { github: { secrets: [SECRET] } } },
      apiKeys: [{ client: 'bench', keyHash: mod.hashApiKey(API_KEY) }],
      rateLimit: false,
      brownout: { enabled: false },
      ...(typeof options.ring === 'number' ? { audit: { memoryCapacity: options.ring } } : {}),
    },
    transport,
    { tokens: toServiceTokens(token) },
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
