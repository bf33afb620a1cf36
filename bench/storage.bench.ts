/**
 * Storage benchmarks (issue 4, item 8). Everything runs side by side with a bare `node:http`
 * baseline in the same process, on the same disk, over real sockets, with the same undici client:
 *
 * - PUT and GET throughput of 1 MiB and 64 MiB objects: the storage service (hash while streaming,
 *   temp file + fsync + rename + dir fsync, verified 64 KiB chunks on the way out) vs a bare server
 *   that writes the body to a temp file + fsync + rename, and serves the object file with
 *   `fs.createReadStream` (no hashing, no verification);
 * - p95 latency of a 1 MiB PUT and of a 64 KiB range GET at concurrency 16;
 * - peak RSS while streaming a 1 GiB object out (service and baseline).
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, open, rename, rm, stat } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Agent, request } from 'undici'
import { serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createFsStore, createStorageService } from '@ron/storage'
import { compare, median, report } from './harness.js'

const MiB = 1024 * 1024

function fill(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n)
  let x = seed >>> 0 || 1
  for (let i = 0; i + 4 <= n; i += 4) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    b.writeUInt32LE(x >>> 0, i)
  }
  return b
}

/** Object path of the fs backend layout (objects/ab/cd/<hex>). */
function objectPath(dir: string, address: string): string {
  const hex = address.slice(3)
  return join(dir, 'objects', hex.slice(0, 2), hex.slice(2, 4), hex)
}

function p95(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0
  for await (const c of body) n += c.length
  return n
}

/** The baseline: a bare node:http server on the same disk. */
async function bareServer(dir: string, storeDir: string): Promise<{ url: string; close(): Promise<void> }> {
  let seq = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      try {
        if (req.method === 'PUT') {
          const tmp = join(dir, `up-${++seq}`)
          await pipeline(req, createWriteStream(tmp))
          const fh = await open(tmp, 'r+')
          await fh.sync()
          await fh.close()
          await rename(tmp, join(dir, `obj-${seq % 64}`))
          res.writeHead(201, { 'content-type': 'application/json' }).end('{}')
          return
        }
        const address = (req.url ?? '').slice(3)
        const path = objectPath(storeDir, address)
        const size = (await stat(path)).size
        const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')
        if (m) {
          const start = Number(m[1])
          const end = Math.min(Number(m[2]), size - 1)
          res.writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}` })
          await pipeline(createReadStream(path, { start, end, highWaterMark: 64 * 1024 }), res)
        } else {
          res.writeHead(200, { 'content-length': size })
          await pipeline(createReadStream(path, { highWaterMark: 64 * 1024 }), res)
        }
      } catch {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      }
    })()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ron-bench-storage-'))
  const storeDir = join(root, 'store')
  const bareDir = join(root, 'bare')
  await (await import('node:fs/promises')).mkdir(bareDir, { recursive: true })
  const issuer = createTestIssuer()
  const svc = await createStorageService({
    dataDir: storeDir,
    auth: { keys: issuer.keys },
    putConcurrency: 16,
    getConcurrency: 32,
  })
  const server = await serve(svc, { port: 0 })
  const bare = await bareServer(bareDir, storeDir)
  const token = issuer.mint({ scope: 'storage:write', aud: 'storage' })
  const dispatcher = new Agent({ connections: 32, pipelining: 1, keepAliveTimeout: 10_000 })
  const auth = { authorization: `Bearer ${token}` }

  const putTo = async (base: string, body: Buffer): Promise<string> => {
    const res = await request(`${base}/o`, { method: 'PUT', body, headers: { ...auth, 'content-length': String(body.length) }, dispatcher })
    const text = await res.body.text()
    if (res.statusCode >= 300) throw new Error(`PUT ${base}: ${res.statusCode} ${text}`)
    return text
  }
  const getFrom = async (base: string, address: string, range?: string): Promise<number> => {
    const res = await request(`${base}/o/${address}`, { method: 'GET', headers: range ? { range } : {}, dispatcher })
    const n = await drain(res.body)
    if (res.statusCode >= 300) throw new Error(`GET ${base}: ${res.statusCode}`)
    return n
  }

  try {
    for (const size of [1 * MiB, 64 * MiB]) {
      const label = size === MiB ? '1 MiB' : '64 MiB'
      const ops = size === MiB ? 16 : 1
      const rounds = 3
      const body = fill(size, 7)
      let n = 0
      const fresh = (): Buffer => {
        body.writeUInt32LE(++n, 0) // new content every time: every service PUT creates an object
        return body
      }
      const put = await compare(
        { name: `bare node:http PUT ${label}`, fn: () => putTo(bare.url, fresh()) },
        [{ name: `storage service PUT ${label}`, fn: () => putTo(server.url, fresh()) }],
        { ops, rounds },
      )
      report(`PUT throughput, ${label} objects (fsync on both sides)`, put.map((m) => ({ ...m, opsPerSec: (m.opsPerSec * size) / MiB })), 'MiB/s')

      const { address } = JSON.parse(await putTo(server.url, fill(size, 99))) as { address: string }
      const get = await compare(
        { name: `bare node:http GET ${label}`, fn: () => getFrom(bare.url, address) },
        [{ name: `storage service GET ${label} (verified)`, fn: () => getFrom(server.url, address) }],
        { ops: size === MiB ? 32 : 2, rounds },
      )
      report(`GET throughput, ${label} objects`, get.map((m) => ({ ...m, opsPerSec: (m.opsPerSec * size) / MiB })), 'MiB/s')
    }

    // Latency at concurrency 16.
    const conc = 16
    const perWorker = 6
    const latencies = async (fn: (i: number) => Promise<unknown>, rounds = perWorker): Promise<number[]> => {
      const out: number[] = []
      await Promise.all(
        Array.from({ length: conc }, async (_, w) => {
          for (let k = 0; k < rounds; k++) {
            const t0 = performance.now()
            await fn(w * perWorker + k)
            out.push(performance.now() - t0)
          }
        }),
      )
      return out
    }
    const bodies = Array.from({ length: conc }, (_, i) => fill(MiB, 1000 + i))
    let seq = 0
    const freshBody = (w: number): Buffer => {
      const b = bodies[w % conc]!
      b.writeUInt32LE(++seq, 0)
      return b
    }
    const rows: Array<{ name: string; p95: number; p50: number }> = []
    for (const [name, base] of [
      ['bare node:http', bare.url],
      ['storage service', server.url],
    ] as const) {
      await latencies((i) => putTo(base, freshBody(i)), 1) // warm-up
      const l = await latencies((i) => putTo(base, freshBody(i)))
      rows.push({ name: `${name} PUT 1 MiB`, p95: p95(l), p50: median(l) })
    }
    const big = JSON.parse(await putTo(server.url, fill(64 * MiB, 5))) as { address: string }
    for (const [name, base] of [
      ['bare node:http', bare.url],
      ['storage service', server.url],
    ] as const) {
      let x = 12345
      const range = (): string => {
        x = (x * 1103515245 + 12345) >>> 0
        const start = x % (64 * MiB - 64 * 1024)
        return `bytes=${start}-${start + 64 * 1024 - 1}`
      }
      await latencies(() => getFrom(base, big.address, range()), 2) // warm-up
      const l = await latencies(() => getFrom(base, big.address, range()))
      rows.push({ name: `${name} GET 64 KiB range`, p95: p95(l), p50: median(l) })
    }
    console.log(`\n## Latency at concurrency ${conc} (${conc * perWorker} requests each)`)
    console.log(`${'case'.padEnd(48)} ${'p50 ms'.padStart(10)} ${'p95 ms'.padStart(10)}`)
    for (const r of rows) console.log(`${r.name.padEnd(48)} ${r.p50.toFixed(2).padStart(10)} ${r.p95.toFixed(2).padStart(10)}`)

    // Peak RSS while streaming a 1 GiB object out.
    const GiB = 1024 * MiB
    async function* gigabyte(): AsyncGenerator<Buffer> {
      const piece = fill(MiB, 3)
      for (let i = 0; i < 1024; i++) {
        const b = Buffer.from(piece)
        b.writeUInt32LE(i, 0)
        yield b
        await Promise.resolve()
      }
    }
    const upRes = await request(`${server.url}/o`, { method: 'PUT', body: Readable.from(gigabyte()), headers: { ...auth, 'content-length': String(GiB) }, dispatcher })
    const huge = JSON.parse(await upRes.body.text()) as { address: string }
    if (upRes.statusCode >= 300) throw new Error(`1 GiB PUT failed: ${upRes.statusCode}`)
    console.log(`\n## Peak RSS while streaming a 1 GiB object (client and server in this process)`)
    for (const [name, base] of [
      ['bare node:http', bare.url],
      ['storage service (verified)', server.url],
    ] as const) {
      const before = process.memoryUsage().rss
      let peak = before
      const timer = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss)
      }, 20)
      const t0 = performance.now()
      const got = await getFrom(base, huge.address)
      const secs = (performance.now() - t0) / 1000
      clearInterval(timer)
      if (got !== GiB) throw new Error(`short read ${got}`)
      console.log(
        `${name.padEnd(48)} rss before ${(before / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB (+${((peak - before) / MiB).toFixed(1)} MiB), ${(GiB / MiB / secs).toFixed(0)} MiB/s`,
      )
    }

    // The data layer alone (no HTTP): verified chunk reads vs a plain fs.createReadStream.
    await server.close()
    await svc.close()
    const store = await createFsStore({ dir: storeDir })
    console.log(`\n## Data layer only: reading the 1 GiB object (no HTTP)`)
    const readers: Array<[string, () => AsyncIterable<Uint8Array>]> = [
      ['fs.createReadStream (64 KiB, unverified)', () => createReadStream(objectPath(storeDir, huge.address), { highWaterMark: 64 * 1024 })],
      [
        'BlobReader.read() (64 KiB chunks, verified)',
        () =>
          (async function* () {
            const r = (await store.open(huge.address as `b3:${string}`))!
            try {
              yield* r.read()
            } finally {
              await r.close()
            }
          })(),
      ],
    ]
    let baseRate = 0
    for (const [name, make] of readers) {
      const before = process.memoryUsage().rss
      let peak = before
      const timer = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss)
      }, 20)
      const t0 = performance.now()
      const got = await drain(make())
      const rate = got / MiB / ((performance.now() - t0) / 1000)
      clearInterval(timer)
      baseRate ||= rate
      console.log(`${name.padEnd(48)} ${rate.toFixed(0).padStart(6)} MiB/s  ${(rate / baseRate).toFixed(2)}x  rss +${((peak - before) / MiB).toFixed(1)} MiB`)
    }

    const piece = fill(64 * 1024, 11)
    async function* pieces(tag: number): AsyncGenerator<Buffer> {
      for (let i = 0; i < 4096; i++) {
        const b = Buffer.from(piece)
        b.writeUInt32LE(i, 0)
        b.writeUInt32LE(tag, 4)
        yield b
        await Promise.resolve()
      }
    }
    const rawRates: number[] = []
    const storeRates: number[] = []
    for (let round = 0; round < 3; round++) {
      let t0 = performance.now()
      const fh = await open(join(bareDir, `raw-${round}`), 'w')
      for await (const b of pieces(round)) await fh.write(b)
      await fh.sync()
      await fh.close()
      rawRates.push(256 / ((performance.now() - t0) / 1000))
      t0 = performance.now()
      await store.put(pieces(100 + round))
      storeRates.push(256 / ((performance.now() - t0) / 1000))
    }
    report(`Data layer only: writing 256 MiB in 64 KiB pieces, fsync'd (no HTTP)`, [
      { name: 'FileHandle.write + fsync (no hashing)', opsPerSec: median(rawRates) },
      { name: 'BlobStore.put (hash + table + fsync + rename)', opsPerSec: median(storeRates) },
    ], 'MiB/s')
    await store.close()
  } finally {
    await dispatcher.close()
    await bare.close()
    await server.close()
    await svc.close()
    await rm(root, { recursive: true, force: true })
  }
}
