import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateIssuerKey, importIssuerKey, signToken } from '@ron/core'
import * as entry from '../src/index.js'
import { DATA_DIR_FORMAT } from '../src/identity.js'
import { exportIssuerKey } from '@ron/core'
import { ADMIN_AUDIENCES, ADMIN_SCOPES } from '../src/keys.js'
import { startNode, type RonNode } from '../src/node.js'

describe('admin listener (on core HTTP handler)', () => {
  let dir: string
  let node: RonNode
  let token: string

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-admin-'))
    node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500, services: ['storage'] })
    await node.whenReady()
    token = (await readFile(node.tokenFile!, 'utf8')).trim()
  })
  afterAll(async () => {
    await node?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('answers errors in the SPEC envelope, echoes X-Corr-ID, and sends Allow with 405', async () => {
    const res = await fetch(`${node.admin}/status`, { method: 'DELETE', headers: { 'x-corr-id': 'test-corr-1' } })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    expect(res.headers.get('x-corr-id')).toBe('test-corr-1')
    const body = (await res.json()) as { error: { code: string; corr_id: string; retryable: boolean } }
    expect(body.error).toMatchObject({ code: 'MethodNotAllowed', corr_id: 'test-corr-1', retryable: false })
    const missing = await fetch(`${node.admin}/nope`)
    expect(missing.status).toBe(404)
    expect(missing.headers.get('x-corr-id')).toBeTruthy()
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('NotFound')
  })

  it('serves merged metrics with the Prometheus content type and a service label per service', async () => {
    const res = await fetch(`${node.admin}/metrics`)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await res.text()
    expect(text).toMatch(/http_requests_total\{[^}]*service="node"/)
    expect(text).toMatch(/config_reloads_total\{[^}]*service="storage"/)
  })

  it("carries prom-client's process metrics once per process, without a service label", async () => {
    const text = await (await fetch(`${node.admin}/metrics`)).text()
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'process_resident_memory_bytes', 'nodejs_gc_duration_seconds']) {
      expect(text.split('\n').filter((l) => l === `# TYPE ${name} ${name === 'nodejs_gc_duration_seconds' ? 'histogram' : 'gauge'}`), name).toHaveLength(1)
    }
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m)
    expect(text).not.toMatch(/nodejs_eventloop_lag_seconds\{[^}]*service=/)
  })

  it('reports the node id and serves its issuer keys as a JWKS at /keys', async () => {
    const status = (await (await fetch(`${node.admin}/status`)).json()) as { nodeId: string; name: string }
    expect(status).toMatchObject({ name: 'ron-node', nodeId: node.nodeId })
    const jwks = (await (await fetch(`${node.admin}/keys`)).json()) as { keys: { kid: string; d?: string }[] }
    expect(jwks.keys.map((k) => k.kid)).toEqual([node.issuerKid])
    expect(jwks.keys[0]!.d).toBeUndefined()
  })

  it('POST /admin/reload needs node:admin, reloads every service, and refuses an invalid value naming it', async () => {
    expect((await fetch(`${node.admin}/admin/reload`, { method: 'POST' })).status).toBe(401)
    const narrow = signToken(generateIssuerKey(), { sub: 'x', aud: ['node'], scope: ['node:admin'], ttlSec: 60 })
    expect((await fetch(`${node.admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${narrow}` } })).status).toBe(401)
    const ok = await fetch(`${node.admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ reloaded: ['storage'] })
    const bad = await fetch(`${node.admin}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ storage: { workQueue: -1 } }),
    })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(await bad.json())).toContain('workQueue')
    const metrics = await (await fetch(`${node.admin}/metrics`)).text()
    expect(metrics).toMatch(/config_reloads_total\{[^}]*service="storage"[^}]*\} [1-9]/)
    expect(metrics).toMatch(/node_reloads_total\{outcome="error"[^}]*\} 1/)
  })

})

describe('ron-node library entry', () => {
  it('exports only startNode and runCli', () => {
    expect(Object.keys(entry).sort()).toEqual(['runCli', 'startNode'])
  })
})

describe('data directory format and node identity', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-format-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('keeps a stable node id and a 0600 node key across restarts', async () => {
    const dataDir = join(dir, 'stable')
    const a = await startNode({ dataDir, portBase: 0, services: ['storage'] })
    await a.close()
    const b = await startNode({ dataDir, portBase: 0, services: ['storage'] })
    await b.close()
    expect(b.nodeId).toBe(a.nodeId)
    expect(a.firstStart).toBe(true)
    expect(b.firstStart).toBe(false)
    const file = JSON.parse(await readFile(join(dataDir, 'node.json'), 'utf8')) as { format: number; nodeId: string }
    expect(file).toMatchObject({ format: DATA_DIR_FORMAT, nodeId: a.nodeId })
    const { stat } = await import('node:fs/promises')
    if (process.platform !== 'win32') expect((await stat(join(dataDir, 'keys', 'node.json'))).mode & 0o777).toBe(0o600)
  })

  it('opens a data directory of the previous release (format 1) and keeps its issuer key', async () => {
    const dataDir = join(dir, 'v1')
    await mkdir(join(dataDir, 'keys'), { recursive: true, mode: 0o700 })
    const key = generateIssuerKey({ epoch: 1 })
    await writeFile(join(dataDir, 'keys', 'issuer.json'), exportIssuerKey(key), { mode: 0o600 })
    const node = await startNode({ dataDir, portBase: 0, services: ['storage'] })
    await node.close()
    expect(node.issuerKid).toBe(key.kid)
    expect(node.firstStart).toBe(false)
    expect(JSON.parse(await readFile(join(dataDir, 'node.json'), 'utf8'))).toMatchObject({ format: DATA_DIR_FORMAT })
  })

  it('refuses a data directory written by a newer release, saying what to do', async () => {
    const dataDir = join(dir, 'future')
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    await writeFile(join(dataDir, 'node.json'), JSON.stringify({ format: DATA_DIR_FORMAT + 1, nodeId: 'nfuture' }))
    const err = await startNode({ dataDir, portBase: 0, services: ['storage'] }).catch((e: unknown) => e)
    expect((err as Error).message).toMatch(/format 3, newer than this ron-node supports \(2\); upgrade ron-node/)
    const { stat } = await import('node:fs/promises')
    await expect(stat(join(dataDir, 'lock'))).rejects.toMatchObject({ code: 'ENOENT' })
  })
})

describe('admin token upkeep', () => {
  let dir: string
  let node: RonNode
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-admin-token-'))
    node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500, adminTokenCheckMs: 50 })
    await node.whenReady()
  })
  afterAll(async () => {
    await node?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('a key rotation replaces the admin token before it answers: the old one is retired, what it minted lives on', async () => {
    const old = (await readFile(node.tokenFile!, 'utf8')).trim()
    const passport = node.services['passport']!
    const post = (path: string, token: string, body?: unknown): Promise<Response> =>
      fetch(`${passport}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const mintedRes = await post('/v1/passport/issue', old, { sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    expect(mintedRes.status).toBe(200)
    const minted = ((await mintedRes.json()) as { token: string }).token
    const rotated = await post('/v1/passport/rotate', old)
    expect(rotated.status).toBe(200)
    // No wait: when the rotation answers, the file already holds the new token and the old one is retired.
    const current = (await readFile(node.tokenFile!, 'utf8')).trim()
    expect(current).not.toBe(old)
    const put = (token: string, body = 'x'): Promise<Response> => fetch(`${node.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body })
    expect((await put(current)).status).toBe(201)
    const refused = await put(old)
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { error: { details: { reason: string } } }).error.details.reason).toBe('revoked')
    // Retiring is not revoking: the token the old admin token issued still writes.
    expect((await put(minted, 'minted before the rotation')).status).toBe(201)
    const feed = (await (await fetch(`${passport}/v1/passport/revocations?since=0`)).json()) as { items: Array<{ jti: string; cascade: boolean }> }
    expect(feed.items).toEqual([expect.objectContaining({ cascade: false })])
  })
})

describe('admin token renewal at start', () => {
  it('a token with under 10 days left is replaced at start, atomically, and the old one retired', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-cli-admin-renew-'))
    try {
      const dataDir = join(dir, 'data')
      const first = await startNode({ dataDir, portBase: 0, drainDeadlineMs: 500, services: ['passport', 'storage'] })
      await first.close()
      // An admin token signed by the node's key with five days left, as an old one would be.
      const key = importIssuerKey(await readFile(join(dataDir, 'keys', 'issuer.json'), 'utf8'))
      const aging = signToken(key, { sub: 'admin', aud: [...ADMIN_AUDIENCES], scope: [...ADMIN_SCOPES], ttlSec: 5 * 86400, jti: 'aging-admin-token' })
      await writeFile(join(dataDir, 'admin.token'), `${aging}\n`, { mode: 0o600 })
      const second = await startNode({ dataDir, portBase: 0, drainDeadlineMs: 500, services: ['passport', 'storage'] })
      try {
        const renewed = (await readFile(second.tokenFile!, 'utf8')).trim()
        expect(renewed).not.toBe(aging)
        const put = (token: string): Promise<Response> => fetch(`${second.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: 'x' })
        expect((await put(renewed)).status).toBe(201)
        expect((await put(aging)).status).toBe(401)
        const feed = (await (await fetch(`${second.services['passport']}/v1/passport/revocations?since=0`)).json()) as { items: Array<{ jti: string; cascade: boolean }> }
        expect(feed.items).toEqual([expect.objectContaining({ jti: 'aging-admin-token', cascade: false })])
        // Nothing but the token is left in the data directory (no temporary file).
        expect((await readdir(dataDir)).filter((n) => n.includes('.tmp'))).toEqual([])
      } finally {
        await second.close()
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
