/**
 * The index on LMDB (a fresh directory under `options.dir` or the temp directory) on its
 * defaults, with a storage stand-in in the same process serving 16 manifests
 * (`extra.manifests`) and an `index:write` token (`extra.token`).
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { MemoryTransport, addressOf, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexService } from '@ron/index'
import type { ServerFactory } from '../../lib/server-child.js'
import { ManifestStore, manifestTexts, tempDir } from './shared.js'

const start: ServerFactory = async (options) => {
  const dir = await tempDir(options)
  const issuer = createTestIssuer()
  const transport = new MemoryTransport()
  const storage = new ManifestStore()
  for (const t of manifestTexts()) {
    const bytes = new TextEncoder().encode(t)
    storage.objects.set(addressOf(bytes), bytes)
  }
  transport.mount('storage', storage)
  const svc = await createIndexService({ dataDir: join(dir, 'index'), auth: { keys: issuer.keys } }, transport)
  const s = await serve(svc)
  return {
    url: s.url,
    extra: { token: issuer.mint({ scope: 'index:write', aud: 'index', ttlSec: 86_400 }), manifests: [...storage.objects.keys()] },
    close: async () => {
      await s.close()
      await svc.close()
      await transport.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
export default start
