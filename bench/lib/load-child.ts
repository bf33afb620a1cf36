/**
 * The load generator process (see `process.ts`). Runs one job at a time on command:
 *
 * - `rate`: autocannon for a fixed time (requests per second, small responses);
 * - `get`: undici GETs at a concurrency (throughput and latency percentiles);
 * - `put`: undici PUTs of fresh bodies (every request's content differs) at a concurrency;
 * - `put-stream`: one large streamed PUT;
 * - `slow-get`: one GET read at a limited rate (the client is slower than the server);
 * - `json`: small JSON requests (name writes) at a concurrency, request `i` to `paths[i % n]`
 *   with `bodies[i % m]`.
 */
import { Readable } from 'node:stream'
import autocannon from 'autocannon'
import { Pool, request } from 'undici'
import { blake3, toAddress } from '@ron/core'

/** A unit of load. Sizes in bytes, durations in seconds. */
export type LoadJob =
  | { kind: 'rate'; url: string; path: string; connections: number; durationSec: number; headers?: Record<string, string> }
  | { kind: 'get'; url: string; path: string; concurrency: number; requests: number; headers?: Record<string, string>; ranges?: { objectSize: number; length: number; seed: number } }
  | {
      kind: 'put'
      url: string
      path: string
      concurrency: number
      requests: number
      size: number
      seed: number
      headers?: Record<string, string>
      expectAddress?: boolean
      /** Stamp every body so its content (address) is new. @default true */
      fresh?: boolean
    }
  | { kind: 'put-stream'; url: string; path: string; size: number; seed: number; headers?: Record<string, string>; expectAddress?: boolean }
  | { kind: 'slow-get'; url: string; path: string; bytesPerSec: number; headers?: Record<string, string> }
  | { kind: 'json'; url: string; method: 'PUT' | 'POST'; paths: string[]; bodies: string[]; concurrency: number; requests: number; headers?: Record<string, string> }

/** What a job measured. Latencies in milliseconds. */
export interface LoadResult {
  requests: number
  seconds: number
  bytes: number
  /** Requests per second over the job. */
  rps: number
  /** Body bytes per second (request bodies for PUT, response bodies for GET). */
  bytesPerSec: number
  p50: number
  p95: number
  p99: number
  /** Status code counts. */
  statuses: Record<string, number>
  errors: number
  /** The last response body (for PUTs: the JSON with the address). */
  lastBody?: string
}

function fill(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n)
  let x = seed >>> 0 || 1
  let i = 0
  for (; i + 4 <= n; i += 4) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    b.writeUInt32LE(x >>> 0, i)
  }
  for (; i < n; i++) b[i] = i & 0xff
  return b
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!
}

function summarise(lat: number[], seconds: number, bytes: number, statuses: Record<string, number>, errors: number, lastBody?: string): LoadResult {
  const s = lat.sort((a, b) => a - b)
  return {
    requests: s.length,
    seconds,
    bytes,
    rps: s.length / seconds,
    bytesPerSec: bytes / seconds,
    p50: pct(s, 0.5),
    p95: pct(s, 0.95),
    p99: pct(s, 0.99),
    statuses,
    errors,
    ...(lastBody === undefined ? {} : { lastBody }),
  }
}

async function rate(job: Extract<LoadJob, { kind: 'rate' }>): Promise<LoadResult> {
  const r = await autocannon({ url: job.url + job.path, connections: job.connections, duration: job.durationSec, headers: job.headers ?? {} })
  const statuses: Record<string, number> = { '2xx': r['2xx'], non2xx: r.non2xx }
  return {
    requests: r.requests.total,
    seconds: r.duration,
    bytes: r.throughput.total,
    rps: r.requests.total / r.duration,
    bytesPerSec: r.throughput.total / r.duration,
    p50: r.latency.p50,
    p95: r.latency.p97_5, // autocannon has no p95; p97.5 is the nearest above
    p99: r.latency.p99,
    statuses,
    errors: r.errors + r.timeouts,
  }
}

async function get(job: Extract<LoadJob, { kind: 'get' }>): Promise<LoadResult> {
  const pool = new Pool(job.url, { connections: job.concurrency, pipelining: 1 })
  const lat: number[] = []
  const statuses: Record<string, number> = {}
  let bytes = 0
  let errors = 0
  let next = 0
  let x = (job.ranges?.seed ?? 1) >>> 0 || 1
  const rangeHeader = (): Record<string, string> => {
    if (!job.ranges) return {}
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    const start = x % (job.ranges.objectSize - job.ranges.length)
    return { range: `bytes=${start}-${start + job.ranges.length - 1}` }
  }
  const t0 = performance.now()
  try {
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (next < job.requests) {
          next++
          const t = performance.now()
          try {
            const res = await pool.request({ method: 'GET', path: job.path, headers: { ...job.headers, ...rangeHeader() } })
            for await (const c of res.body) bytes += (c as Buffer).length
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          } catch {
            errors++
          }
          lat.push(performance.now() - t)
        }
      }),
    )
  } finally {
    await pool.close()
  }
  return summarise(lat, (performance.now() - t0) / 1000, bytes, statuses, errors)
}

async function put(job: Extract<LoadJob, { kind: 'put' }>): Promise<LoadResult> {
  const pool = new Pool(job.url, { connections: job.concurrency, pipelining: 1 })
  const lat: number[] = []
  const statuses: Record<string, number> = {}
  let errors = 0
  let next = 0
  let lastBody: string | undefined
  // One body per worker, changed before each of its requests (its previous one has finished).
  const bodies = Array.from({ length: job.concurrency }, (_, w) => fill(job.size, job.seed * 1000 + w + 1))
  const stamp = `${process.pid}-${Date.now()}`
  const t0 = performance.now()
  try {
    await Promise.all(
      bodies.map(async (body) => {
        while (next < job.requests) {
          const n = ++next
          if (job.fresh !== false && body.length >= 8) {
            body.writeUInt32LE(n, 0)
            body.writeUInt32LE(Number.parseInt(stamp.slice(-8), 36) >>> 0, 4)
          }
          const headers: Record<string, string> = { ...job.headers, 'content-length': String(body.length) }
          if (job.expectAddress === true) headers['x-expect-address'] = toAddress(blake3(body))
          const t = performance.now()
          try {
            const res = await pool.request({ method: 'PUT', path: job.path, body, headers })
            lastBody = await res.body.text()
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          } catch {
            errors++
          }
          lat.push(performance.now() - t)
        }
      }),
    )
  } finally {
    await pool.close()
  }
  const ok = Object.entries(statuses).reduce((n, [k, v]) => n + (k.startsWith('2') ? v : 0), 0)
  return summarise(lat, (performance.now() - t0) / 1000, ok * job.size, statuses, errors, lastBody)
}

async function putStream(job: Extract<LoadJob, { kind: 'put-stream' }>): Promise<LoadResult> {
  const piece = fill(1024 * 1024, job.seed)
  const pieces = Math.ceil(job.size / piece.length)
  const make = (i: number): Buffer => {
    const b = Buffer.from(piece.subarray(0, Math.min(piece.length, job.size - i * piece.length)))
    if (b.length >= 8) {
      b.writeUInt32LE(i, 0)
      b.writeUInt32LE(job.seed, 4)
    }
    return b
  }
  const headers: Record<string, string> = { ...job.headers, 'content-length': String(job.size) }
  if (job.expectAddress === true) {
    const { createBlake3 } = await import('@ron/core')
    const h = createBlake3()
    for (let i = 0; i < pieces; i++) h.update(make(i))
    headers['x-expect-address'] = toAddress(h.digest())
  }
  async function* body(): AsyncGenerator<Buffer> {
    for (let i = 0; i < pieces; i++) yield make(i)
  }
  const t0 = performance.now()
  const res = await request(job.url + job.path, { method: 'PUT', body: Readable.from(body()), headers })
  const text = await res.body.text()
  const seconds = (performance.now() - t0) / 1000
  return summarise([seconds * 1000], seconds, job.size, { [res.statusCode]: 1 }, 0, text)
}

async function slowGet(job: Extract<LoadJob, { kind: 'slow-get' }>): Promise<LoadResult> {
  const t0 = performance.now()
  const res = await request(job.url + job.path, { method: 'GET', headers: job.headers ?? {} })
  let bytes = 0
  for await (const c of res.body) {
    bytes += (c as Buffer).length
    const due = (bytes / job.bytesPerSec) * 1000 - (performance.now() - t0)
    if (due > 1) await new Promise((r) => setTimeout(r, due))
  }
  const seconds = (performance.now() - t0) / 1000
  return summarise([seconds * 1000], seconds, bytes, { [res.statusCode]: 1 }, 0)
}

async function json(job: Extract<LoadJob, { kind: 'json' }>): Promise<LoadResult> {
  const pool = new Pool(job.url, { connections: job.concurrency, pipelining: 1 })
  const lat: number[] = []
  const statuses: Record<string, number> = {}
  let errors = 0
  let next = 0
  let lastBody: string | undefined
  const headers = { ...job.headers, 'content-type': 'application/json' }
  const t0 = performance.now()
  try {
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (next < job.requests) {
          const n = next++
          const t = performance.now()
          try {
            const res = await pool.request({ method: job.method, path: job.paths[n % job.paths.length]!, body: job.bodies[n % job.bodies.length]!, headers })
            lastBody = await res.body.text()
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          } catch {
            errors++
          }
          lat.push(performance.now() - t)
        }
      }),
    )
  } finally {
    await pool.close()
  }
  return summarise(lat, (performance.now() - t0) / 1000, 0, statuses, errors, lastBody)
}

async function runJob(job: LoadJob): Promise<LoadResult> {
  switch (job.kind) {
    case 'rate':
      return rate(job)
    case 'get':
      return get(job)
    case 'put':
      return put(job)
    case 'put-stream':
      return putStream(job)
    case 'slow-get':
      return slowGet(job)
    case 'json':
      return json(job)
  }
}

process.on('message', (m: { id: number; cmd: string; job?: LoadJob }) => {
  const work = m.cmd === 'run' ? runJob(m.job!) : Promise.resolve(undefined)
  work.then(
    (value) => {
      process.send!({ id: m.id, ok: true, value })
      if (m.cmd === 'close') setImmediate(() => process.exit(0))
    },
    (e: unknown) => process.send!({ id: m.id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
  )
})
process.on('disconnect', () => process.exit(0))
