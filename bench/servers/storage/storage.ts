/**
 * The storage service on its defaults, on disk in `<dir>` (a fresh temp directory, removed on
 * close, when absent: `callgrind.ts` passes no `dir`), behind `serve`. Any other option is
 * passed to `createStorageService` (a case that changes a default must say so). The bench gets a
 * `storage:write storage:read` token in `extra.token`. The token is signed with core's public API, not
 * `@ron/core/testing`: that entry loads fast-check, and a heavier heap than a user's process would
 * have makes every mark-compact of the server dearer.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateIssuerKey, serve, signToken, staticKeySource } from '@ron/core'
import { createStorageService } from '@ron/storage'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async (options) => {
  const { dir, ...rest } = options
  const own = dir === undefined ? await mkdtemp(join(tmpdir(), 'ron-bench-storage-')) : undefined
  const key = generateIssuerKey()
  const svc = await createStorageService({ ...rest, dataDir: own ?? String(dir), auth: { keys: staticKeySource([key]) } })
  const server = await serve(svc, { port: 0 })
  const token = signToken(key, { sub: 'bench', scope: 'storage:write storage:read', aud: 'storage', ttlSec: 24 * 3600 })
  return {
    url: server.url,
    extra: { token },
    close: async () => {
      await server.close()
      await svc.close()
      if (own !== undefined) await rm(own, { recursive: true, force: true })
    },
  }
}
export default start
