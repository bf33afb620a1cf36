/**
 * Baseline server: bare `node:http`, no framework.
 *
 * - `GET /hello`: the same JSON the RON hello route answers;
 * - `GET /o/<name>`: the file `<dir>/o/<name>`, read per request (`readFile` up to 64 KiB,
 *   `createReadStream` with 64 KiB reads above), single `Range` supported;
 * - `PUT /o`: the durability RON promises and nothing else: temp file, fsync, rename, directory
 *   fsync. Named after `x-expect-address` when given (so GET can find it), else a counter.
 *
 * Options: `{ dir }` (a fresh temp directory, removed on close, when absent).
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, open, readFile, rename, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { ServerFactory } from '../../lib/server-child.js'

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

const start: ServerFactory = async (options) => {
  const own = options.dir === undefined ? await mkdtemp(join(tmpdir(), 'ron-bench-bare-')) : undefined
  const dir = own ?? String(options.dir)
  const objects = join(dir, 'o')
  const tmp = join(dir, 'tmp')
  await mkdir(objects, { recursive: true })
  await mkdir(tmp, { recursive: true })
  let seq = 0
  const hello = JSON.stringify({ hello: 'world' })

  async function put(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const n = ++seq
    const t = join(tmp, `up-${process.pid}-${n}`)
    const fh = await open(t, 'wx')
    try {
      await pipeline(req, createWriteStream('', { fd: fh.fd, autoClose: false }))
      await fh.sync()
    } finally {
      await fh.close()
    }
    const name = typeof req.headers['x-expect-address'] === 'string' ? req.headers['x-expect-address'] : `put-${n % 256}`
    await rename(t, join(objects, name))
    await fsyncPath(objects)
    const body = JSON.stringify({ address: name })
    res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
  }

  async function get(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    const path = join(objects, name)
    const size = (await stat(path)).size
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')
    if (m) {
      const s = Number(m[1])
      const e = Math.min(Number(m[2]), size - 1)
      res.writeHead(206, { 'content-length': e - s + 1, 'content-range': `bytes ${s}-${e}/${size}`, 'content-type': 'application/octet-stream' })
      await pipeline(createReadStream(path, { start: s, end: e, highWaterMark: 64 * 1024 }), res)
    } else if (size <= 64 * 1024) {
      const data = await readFile(path)
      res.writeHead(200, { 'content-length': data.length, 'content-type': 'application/octet-stream' }).end(data)
    } else {
      res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' })
      await pipeline(createReadStream(path, { highWaterMark: 64 * 1024 }), res)
    }
  }

  const server = createServer((req, res) => {
    const url = req.url ?? '/'
    if (req.method === 'GET' && url === '/hello') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(hello) }).end(hello)
      return
    }
    const work = req.method === 'PUT' && url === '/o' ? put(req, res) : req.method === 'GET' && url.startsWith('/o/') ? get(req, res, decodeURIComponent(url.slice(3))) : undefined
    if (work === undefined) {
      res.writeHead(404).end()
      return
    }
    work.catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
      else res.destroy()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      })
      if (own !== undefined) await rm(own, { recursive: true, force: true })
    },
  }
}
export default start
