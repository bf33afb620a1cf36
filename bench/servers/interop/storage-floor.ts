/**
 * The durable floor of interop's webhooks and uploads: storage's own `PUT /o` on the filesystem
 * backend in a temporary directory (removed on close), a writer's token in `extra.token`. No options.
 */
import { rmSync } from 'node:fs'
import { serve } from '@ron/core'
import type { ServerFactory } from '../../lib/server-child.js'
import { fsStorage } from './shared.js'

const start: ServerFactory = async () => {
  const { dir, storage, token } = await fsStorage()
  const server = await serve(storage, { port: 0 })
  return {
    url: server.url,
    extra: { token },
    close: async () => {
      await server.close()
      await storage.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
export default start
