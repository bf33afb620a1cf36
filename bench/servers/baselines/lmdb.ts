/**
 * The name-write baseline of the index: bare `node:http` + a bare LMDB `put` (flushed) per
 * `PUT /names/:name`, the same JSON in and out as the index: the same durability, no checks.
 * Options: `{ dir? }` (where the LMDB directory goes; a temp directory by default);
 * `extra.manifests`: the addresses of the index bench's 16 manifests (what the bodies name).
 */
import { createServer } from 'node:http'
import { rm } from 'node:fs/promises'
import { open } from 'lmdb'
import { addressOf } from '@ron/core'
import type { ServerFactory } from '../../lib/server-child.js'
import { closeServer, listen, manifestTexts, tempDir } from '../index/shared.js'

const start: ServerFactory = async (options) => {
  const dir = await tempDir(options)
  const db = open<{ manifestAddress: string }, string>({ path: dir, name: 'names', compression: false, noSync: false, encoding: 'msgpack' })
  const server = createServer((req, res) => {
    const name = req.method === 'PUT' && req.url?.startsWith('/names/') === true ? req.url.slice('/names/'.length) : undefined
    if (name === undefined) {
      res.writeHead(404).end()
      return
    }
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        try {
          const { manifestAddress } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { manifestAddress: string }
          await db.put(name, { manifestAddress })
          await db.flushed
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, manifestAddress }))
        } catch (e) {
          res.writeHead(500).end(String(e))
        }
      })()
    })
  })
  const url = await listen(server)
  return {
    url,
    extra: { manifests: manifestTexts().map((t) => addressOf(new TextEncoder().encode(t))) },
    close: async () => {
      await closeServer(server)
      await db.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
export default start
