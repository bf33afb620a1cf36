/**
 * Reads from any node (issue 23 item 4): an object this node's storage lacks is fetched from a
 * provider index names, one hop, verified whole before the first byte goes out — in memory when
 * small, through an unlinked temporary file when large — within the read deadline, and kept in a
 * bounded cache. A provider that flips one byte produces an error, never a wrong byte.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, dirManifest, metricValue, type DispatchTarget, type RonRequest, type RonResponse } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'
import { createIndexClient } from '@ron/index'
import { flippingProvider, mesh, otherStorage, type Mesh } from './gateway-helpers.js'

let m: Mesh | undefined
const dirs: string[] = []
afterEach(async () => {
  await m?.close()
  m = undefined
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

const remote = async (mm: Mesh, result: string): Promise<number | undefined> => metricValue(await mm.interop.metricsText(), 'gateway_remote_reads_total', { result })

/** Publishes `files` whose contents live only on the storage mounted as `target` (the manifest stays local). */
async function publishElsewhere(mm: Mesh, name: string, files: Record<string, Uint8Array>, target: string): Promise<void> {
  const entries = []
  for (const [path, bytes] of Object.entries(files)) {
    const address = await mm.put(bytes, target)
    await mm.announce(address, target)
    entries.push({ path, content: address, size: bytes.byteLength, type: 'application/octet-stream' })
  }
  const manifest = await mm.put(dirManifest(entries).bytes)
  const token = mm.issuer.mint({ scope: 'index:write', aud: 'index' })
  await createIndexClient(mm.transport, { token }).setName(name, manifest)
}

describe('reads from another node', () => {
  it('fetches what this node lacks from a known provider, verified, and keeps a bounded copy', async () => {
    m = await mesh()
    const b = await otherStorage(m, 'storage-b')
    const provider = flippingProvider(b) // flips nothing: counts the GETs
    m.transport.mount('storage-b', provider)
    const bytes = randomBytes(5000)
    await publishElsewhere(m, 'far.alice', { 'data.bin': bytes }, 'storage-b')
    const first = await m.get('/n/far.alice/data.bin', { host: '127.0.0.1' })
    expect(first.status).toBe(200)
    expect(first.bytes.equals(bytes)).toBe(true)
    const raw = await m.get(`/o/${addressOf(bytes)}`)
    expect(raw.bytes.equals(bytes)).toBe(true)
    expect(await remote(m, 'ok')).toBe(1)
    // The second read was the cached copy: the provider was asked once.
    expect(provider.gets).toBe(1)
    expect(metricValue(await m.interop.metricsText(), 'gateway_cache_hits_total')).toBe(1)
    expect(metricValue(await m.interop.metricsText(), 'gateway_cache_bytes')).toBe(5000)
  })

  it('a provider that flips one byte: an error (503 integrity), never a wrong byte; a good provider then serves it', async () => {
    m = await mesh()
    const b = await otherStorage(m, 'storage-b')
    m.transport.mount('storage-b', flippingProvider(b, 17))
    const bytes = randomBytes(3000)
    await publishElsewhere(m, 'far.alice', { 'data.bin': bytes }, 'storage-b')
    for (const path of ['/n/far.alice/data.bin', `/o/${addressOf(bytes)}`]) {
      const res = await m.get(path, { host: '127.0.0.1' })
      expect(res.status, path).toBe(503)
      expect(JSON.parse(res.utf8), path).toMatchObject({ error: { code: 'Unavailable', details: { reason: 'integrity' } } })
    }
    expect(await remote(m, 'integrity')).toBe(2)
    // Nothing bad was kept: once a provider with the right bytes is known, the read succeeds.
    await otherStorage(m, 'storage-c')
    await m.put(bytes, 'storage-c')
    await m.announce(addressOf(bytes), 'storage-c', 'n-c')
    const good = await m.get(`/o/${addressOf(bytes)}`)
    expect(good.status).toBe(200)
    expect(good.bytes.equals(bytes)).toBe(true)
    expect(await remote(m, 'ok')).toBe(1)
  })

  it('a large object is verified through an unlinked temporary file; ranges are cut from it; nothing is left behind', async () => {
    const spoolDir = await mkdtemp(join(tmpdir(), 'ron-spool-'))
    dirs.push(spoolDir)
    m = await mesh({ gateway: { memoryBytes: 64 * 1024, spoolDir } })
    const b = await otherStorage(m, 'storage-b')
    const bytes = randomBytes(300 * 1024)
    await publishElsewhere(m, 'big.alice', { 'big.bin': bytes }, 'storage-b')
    const read = async (headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> => {
      const res = await m!.transport.request('interop', { method: 'GET', path: '/n/big.alice/big.bin', headers: { host: '127.0.0.1', ...headers } })
      const chunks: Uint8Array[] = []
      for await (const c of res.body) chunks.push(c)
      return { status: res.status, body: Buffer.concat(chunks), headers: res.headers }
    }
    const whole = await read()
    expect(whole.status).toBe(200)
    expect(whole.body.equals(bytes)).toBe(true)
    const part = await read({ range: 'bytes=100000-100009' })
    expect([part.status, part.headers['content-range']]).toEqual([206, `bytes 100000-100009/${bytes.length}`])
    expect(part.body.equals(bytes.subarray(100000, 100010))).toBe(true)
    // Too big for the cache: each read went to the provider and through a file.
    expect(metricValue(await m.interop.metricsText(), 'gateway_spooled_total')).toBe(2)
    expect(await readdir(spoolDir)).toEqual([])
    // A flipped byte in a large object: an error, and no file left either.
    m.transport.mount('storage-b', flippingProvider(b, 200 * 1024))
    const bad = await read({ range: 'bytes=0-9' })
    expect(bad.status).toBe(503)
    expect(bad.body.includes(bytes.subarray(0, 10))).toBe(false)
    expect(await readdir(spoolDir)).toEqual([])
  })

  it('amnesia mode spools nothing: an object from another node over gateway.memoryBytes is 413, a smaller one is served', async () => {
    m = await mesh({ amnesia: true, gateway: { memoryBytes: 64 * 1024 } })
    await otherStorage(m, 'storage-b')
    const big = randomBytes(100 * 1024)
    const small = randomBytes(1000)
    await publishElsewhere(m, 'far.alice', { 'big.bin': big, 'small.bin': small }, 'storage-b')
    const refused = await m.get('/n/far.alice/big.bin', { host: '127.0.0.1' })
    expect(refused.status).toBe(413)
    expect(JSON.parse(refused.utf8)).toMatchObject({ error: { code: 'OverLimit', details: { reason: 'amnesia', limit: 64 * 1024 } } })
    expect(metricValue(await m.interop.metricsText(), 'gateway_spooled_total')).toBe(0)
    expect((await m.get('/n/far.alice/small.bin', { host: '127.0.0.1' })).bytes.equals(small)).toBe(true)
  })

  it('reads from other nodes at once are bounded (429 Busy past gateway.maxRemoteReads)', async () => {
    m = await mesh({ gateway: { maxRemoteReads: 1 } })
    const b = await otherStorage(m, 'storage-b')
    const gate = deferred()
    const started = deferred()
    const stalling: DispatchTarget = {
      async dispatch(req: RonRequest): Promise<RonResponse> {
        if (req.method === 'GET') {
          started.resolve()
          await gate.promise
        }
        return b.dispatch(req)
      },
    }
    m.transport.mount('storage-b', stalling)
    const one = randomBytes(100)
    const two = randomBytes(100)
    await publishElsewhere(m, 'far.alice', { 'one.bin': one, 'two.bin': two }, 'storage-b')
    const first = m.get('/n/far.alice/one.bin', { host: '127.0.0.1' })
    await started.promise
    const second = await m.get('/n/far.alice/two.bin', { host: '127.0.0.1' })
    expect(second.status).toBe(429)
    expect(JSON.parse(second.utf8)).toMatchObject({ error: { code: 'Busy', details: { reason: 'remote_reads' } } })
    gate.resolve()
    expect((await first).status).toBe(200)
    expect((await m.get('/n/far.alice/two.bin', { host: '127.0.0.1' })).status).toBe(200)
  })

  it('a provider that never finishes is cut at the read deadline: 504 Timeout, counted', async () => {
    const clock = new VirtualClock(1_000_000)
    m = await mesh({ gateway: { readTimeoutMs: 5000 } }, clock)
    const b = await otherStorage(m, 'storage-b')
    const started = deferred()
    const hanging: DispatchTarget = {
      async dispatch(req: RonRequest): Promise<RonResponse> {
        const res = await b.dispatch(req)
        if (req.method !== 'GET') return res
        started.resolve()
        return {
          ...res,
          body: (async function* () {
            yield new Uint8Array(10)
            await new Promise<void>((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason as Error), { once: true }))
          })(),
        }
      },
    }
    m.transport.mount('storage-b', hanging)
    const bytes = randomBytes(100)
    await publishElsewhere(m, 'slow.alice', { 'x.bin': bytes }, 'storage-b')
    const pending = m.get('/n/slow.alice/x.bin', { host: '127.0.0.1' })
    await started.promise
    await clock.advance(4999)
    await clock.advance(1)
    const res = await pending
    expect(res.status).toBe(504)
    expect(metricValue(await m.interop.metricsText(), 'io_timeouts_total', { op: 'gateway.remote' })).toBe(1)
  })
})
