/**
 * A full disk never kills index (issue 20, item 3): on a real small volume (a tmpfs filled to
 * ENOSPC), a name write answers 503 `NotReady` `disk_full` instead of 500, the process survives
 * (no unhandled LMDB "Commit failed" rejection), reads keep working, `/readyz` reports writes
 * unready, and writes come back once the volume has room again. Where no tmpfs can be mounted
 * (not root, not Linux), `disk-fault-injected.test.ts` covers the same paths with injected faults.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { HttpTransport, addressOf, serve } from '@ron/core'
import { createTestIssuer, mountTmpfs } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '../src/index.js'
import { manifestFor } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** A storage read path on a real socket serving the given manifests. */
async function storageServer(): Promise<{ url: string; put(value: unknown): string }> {
  const objects = new Map<string, Uint8Array>()
  const server: Server = createServer((req, res) => {
    const bytes = objects.get((req.url ?? '').replace(/^\/o\//, ''))
    if (bytes === undefined) res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NotFound","message":"no","retryable":false,"corr_id":"x","details":{}}}')
    else res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength }).end(bytes)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(() => new Promise<void>((r) => server.close(() => r())))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    put(value) {
      const bytes = new TextEncoder().encode(JSON.stringify(value))
      const a = addressOf(bytes)
      objects.set(a, bytes)
      return a
    },
  }
}

/** A name write over plain HTTP, as curl would send it: status and error envelope. */
async function putName(url: string, token: string, name: string, manifestAddress: string): Promise<{ status: number; body: { error?: { code: string; details: { reason?: string } } } }> {
  const res = await fetch(`${url}/names/${name}`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ manifestAddress }) })
  return { status: res.status, body: (await res.json()) as { error?: { code: string; details: { reason?: string } } } }
}

describe('index on a full volume', () => {
  it('in process over a real socket: 503 disk_full, reads go on, writes unready, then back once there is room', async () => {
    const fs = await mountTmpfs(4 * 1024 * 1024)
    if (fs === undefined) {
      // Not root or not Linux: the injected-fault test covers this path.
      expect(process.platform !== 'linux' || process.getuid?.() !== 0).toBe(true)
      return
    }
    closers.push(() => fs.close())
    const unhandled: unknown[] = []
    const onUnhandled = (e: unknown): void => void unhandled.push(e)
    process.on('unhandledRejection', onUnhandled)
    closers.push(() => Promise.resolve(void process.off('unhandledRejection', onUnhandled)))

    const issuer = createTestIssuer()
    const storage = await storageServer()
    const transport = new HttpTransport({ targets: { storage: storage.url } })
    closers.push(() => transport.close())
    const index = await createIndexService({ dataDir: fs.path, storageTimeoutMs: 30_000, storeProbeMs: 50, auth: { keys: issuer.keys } }, transport)
    closers.push(() => index.close())
    const server = await serve(index)
    closers.push(() => server.close())
    const token = issuer.mint({ scope: 'index:write', aud: 'index' })
    const m1 = storage.put(manifestFor('before'))
    expect((await putName(server.url, token, 'kept.name', m1)).status).toBe(200)

    await fs.fill()
    const m2 = storage.put(manifestFor('during'))
    const refused = await putName(server.url, token, 'new.name', m2)
    expect(refused).toMatchObject({ status: 503, body: { error: { code: 'NotReady', details: { reason: 'disk_full' } } } })
    // Writes are unready at once; the next one is refused without touching the disk.
    expect(await putName(server.url, token, 'other.name', m2)).toMatchObject({ status: 503, body: { error: { details: { reason: 'disk_full' } } } })
    const ready = await fetch(`${server.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ ready: true, writeReady: false, paths: { names: false, resolve: true }, missing: expect.arrayContaining(['disk']) as unknown })
    // Reads keep working.
    await expect(createIndexClient(transport, { target: server.url }).resolve('kept.name')).resolves.toMatchObject({ manifestAddress: m1, source: 'local' })
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/index_store_faults_total\{[^}]*reason="disk_full"[^}]*\} 1/)

    await fs.unfill()
    await vi.waitFor(() => expect(index.health().writeReady).toBe(true), { timeout: 20_000, interval: 50 })
    expect((await putName(server.url, token, 'new.name', m2)).status).toBe(200)
    await expect(createIndexClient(transport, { target: server.url }).resolve('new.name')).resolves.toMatchObject({ manifestAddress: m2 })
    // Full again, and closed while full: close() still finishes (lmdb would wait for a flush that
    // never comes after a failed commit).
    await fs.fill()
    // LMDB may still place a write or two in pages it freed (the resolve above wrote back the
    // record's signature): write until the full volume refuses one.
    const late = storage.put(manifestFor('late'))
    let status = 200
    for (let i = 0; i < 64 && status === 200; i++) status = (await putName(server.url, token, `late${i}.name`, late)).status
    expect(status).toBe(503)
    await server.close()
    await index.close()
    expect(unhandled).toEqual([])
  })

  it('as its own process: the full disk answers 503 and the process lives on (it used to exit on an unhandled "Commit failed")', async () => {
    const fs = await mountTmpfs(4 * 1024 * 1024)
    if (fs === undefined) {
      expect(process.platform !== 'linux' || process.getuid?.() !== 0).toBe(true)
      return
    }
    closers.push(() => fs.close())
    const issuer = createTestIssuer()
    const storage = await storageServer()
    const fixture = fileURLToPath(new URL('./fixtures/index-node.ts', import.meta.url))
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', fixture, fs.path, storage.url], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, RON_TEST_JWKS: JSON.stringify(issuer.jwks) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    closers.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    })
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString()
        const line = out.split('\n')[0]
        if (out.includes('\n') && line !== undefined) resolve(JSON.parse(line) as { url: string })
      })
      void exited.then((code) => reject(new Error(`index process exited (${code}) before listening: ${stderr}`)))
    })
    const token = issuer.mint({ scope: 'index:write', aud: 'index' })
    expect((await putName(url, token, 'kept.name', storage.put(manifestFor('k')))).status).toBe(200)

    await fs.fill()
    // Several writes against the full volume: each a 503, none a 500, and the process stays.
    for (let i = 0; i < 5; i++) {
      const r = await putName(url, token, `full-${i}.name`, storage.put(manifestFor(`f${i}`)))
      expect(r, JSON.stringify(r)).toMatchObject({ status: 503, body: { error: { code: 'NotReady', details: { reason: 'disk_full' } } } })
    }
    // Give a crash every chance to happen: the commit failure's follow-up rejection lands a turn later.
    const stillUp = await fetch(`${url}/healthz`)
    expect(stillUp.status).toBe(200)
    await stillUp.body?.cancel()
    const resolved = await fetch(`${url}/resolve/kept.name`)
    expect(resolved.status).toBe(200)
    await resolved.body?.cancel()
    expect(child.exitCode).toBeNull()

    await fs.unfill()
    await vi.waitFor(
      async () => {
        const r = await fetch(`${url}/readyz`)
        expect(((await r.json()) as { writeReady: boolean }).writeReady).toBe(true)
      },
      { timeout: 20_000, interval: 100 },
    )
    expect((await putName(url, token, 'after.name', storage.put(manifestFor('after')))).status).toBe(200)
    expect(child.exitCode).toBeNull()
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  }, 90_000)
})
