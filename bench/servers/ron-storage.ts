/**
 * The storage service on its defaults, on disk in `<dir>`, behind `serve`. Any other option is
 * passed to `createStorageService` (a case that changes a default must say so). The bench gets a
 * `storage:write storage:read` token in `extra.token`.
 */
import { serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '@ron/storage'
import type { ServerFactory } from '../server-child.js'

const start: ServerFactory = async (options) => {
  const { dir, ...rest } = options
  const issuer = createTestIssuer()
  const svc = await createStorageService({ ...rest, dataDir: String(dir), auth: { keys: issuer.keys } })
  const server = await serve(svc, { port: 0 })
  const token = issuer.mint({ scope: 'storage:write storage:read', aud: 'storage', ttlSec: 24 * 3600 })
  return {
    url: server.url,
    extra: { token },
    close: async () => {
      await server.close()
      await svc.close()
    },
  }
}
export default start
