/**
 * The admin routes (issue 21, SPEC §5 scope `interop:admin`): webhook secrets and API keys set and
 * rotated without a restart, with an overlap on the injected clock during which the old and the
 * new one are both accepted; refused after it. Who may call them, and that no secret ever leaves in
 * an answer, a log line or a metric. Durable with a dataDir (fsync before the answer).
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Logger } from '@ron/core'
import { mountTmpfs, tempDir, type TempDir } from '@ron/core/testing'
import { signWebhook } from '../src/index.js'
import { API_KEY, SECRETS, T0, readJson, system, type System } from './helpers.js'

let sys: System | undefined
const dirs: TempDir[] = []
afterEach(async () => {
  await sys?.close()
  sys = undefined
  for (const d of dirs.splice(0)) await d.cleanup()
})

/** A logger keeping every record as JSON text. */
function recordingLogger(lines: string[], bindings: Record<string, unknown> = {}): Logger {
  const log =
    (level: string) =>
    (obj: unknown, msg?: string): void => {
      lines.push(JSON.stringify({ level, ...bindings, obj, msg }))
    }
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: (b) => recordingLogger(lines, { ...bindings, ...b }) }
}

const NEW_GH = 'gh-rotated-secret-0123456789'
const NEW_KEY = 'ronk_rotated_key_abcdef0123456789'
const HOUR = 3600_000

function adminHeaders(s: System, scope = ['interop:admin']): Record<string, string> {
  return { authorization: `Bearer ${s.issuer.mint({ aud: ['interop'], scope, ttlSec: 86_400 * 30 })}`, 'content-type': 'application/json' }
}

async function deliver(s: System, secret: string, id: string): Promise<number> {
  const w = signWebhook({ provider: 'github', secret, body: `{"n":"${id}"}`, nowMs: s.clock.now(), deliveryId: id })
  const res = await s.request(w.method, w.path, w.headers, w.body)
  await res.dump()
  return res.status
}

let uploads = 0
async function upload(s: System, key: string): Promise<number> {
  const res = await s.request('POST', '/put', { 'x-api-key': key }, `upload number ${++uploads}`)
  await res.dump()
  return res.status
}

describe('interop admin routes', () => {
  it('refuse a request without a token (401) and a token without interop:admin (403)', async () => {
    sys = await system()
    const body = JSON.stringify({ secret: NEW_GH })
    const none = await sys.request('PUT', '/admin/webhooks/github/secret', { 'content-type': 'application/json' }, body)
    expect(none.status).toBe(401)
    await none.dump()
    for (const [method, path] of [
      ['PUT', '/admin/webhooks/github/secret'],
      ['PUT', '/admin/api-keys/alice'],
      ['DELETE', '/admin/api-keys/alice'],
      ['GET', '/admin/credentials'],
    ] as const) {
      const res = await sys.request(method, path, adminHeaders(sys, ['storage:write', 'index:admin']), method === 'PUT' ? body : undefined)
      expect(res.status, `${method} ${path}`).toBe(403)
      expect((await readJson<{ error: { code: string } }>(res)).error.code).toBe('Forbidden')
    }
    // Nothing changed: the old secret is still the only one.
    expect(await deliver(sys, SECRETS.github, 'still-old')).toBe(202)
    expect(await deliver(sys, NEW_GH, 'not-yet')).toBe(401)
  })

  it('rotate a webhook secret: old and new accepted during the overlap, the old refused after it; no secret in answers, logs or metrics', async () => {
    const lines: string[] = []
    sys = await system({}, { runtime: { logger: recordingLogger(lines) } })
    const res = await sys.request('PUT', '/admin/webhooks/github/secret', adminHeaders(sys), JSON.stringify({ secret: NEW_GH, overlapMs: HOUR }))
    expect(res.status).toBe(200)
    const text = new TextDecoder().decode(await res.bytes())
    const out = JSON.parse(text) as { provider: string; id: string; previous: { id: string; expiresAt: number }[] }
    expect(out).toMatchObject({ provider: 'github', previous: [{ id: 'cfg:0', source: 'admin', expiresAt: T0 + HOUR }] })
    expect(await deliver(sys, NEW_GH, 'new-1')).toBe(202)
    expect(await deliver(sys, SECRETS.github, 'old-1')).toBe(202)
    await sys.clock.advance(HOUR - 1)
    expect(await deliver(sys, SECRETS.github, 'old-2')).toBe(202)
    await sys.clock.advance(1)
    expect(await deliver(sys, SECRETS.github, 'old-3')).toBe(401)
    expect(await deliver(sys, NEW_GH, 'new-2')).toBe(202)
    // Other providers are untouched.
    const list = await readJson<{ providers: Record<string, { id: string; expiresAt?: number }[]> }>(await sys.request('GET', '/admin/credentials', adminHeaders(sys)))
    expect(list.providers.github).toEqual([{ id: out.id, source: 'admin' }])
    expect(list.providers.slack).toEqual([{ id: 'cfg:0', source: 'config' }])
    const metrics = await sys.interop.metricsText()
    expect(metrics).toMatch(/admin_changes_total\{kind="webhook_secret",service="interop"\} 1/)
    const everything = [text, JSON.stringify(list), metrics, ...lines].join('\n')
    expect(lines.some((l) => l.includes('webhook secret rotated'))).toBe(true)
    for (const secret of [NEW_GH, SECRETS.github, SECRETS.slack, SECRETS.stripe, SECRETS.standard]) expect(everything).not.toContain(secret)
  })

  it('rotate an API key: both keys upload during the overlap, the old refused after it; DELETE refuses at once', async () => {
    const lines: string[] = []
    sys = await system({ admin: { rotationOverlapMs: '10m' } }, { runtime: { logger: recordingLogger(lines) } })
    expect(await upload(sys, API_KEY)).toBe(201)
    const res = await sys.request('PUT', '/admin/api-keys/alice', adminHeaders(sys), JSON.stringify({ key: NEW_KEY }))
    expect(res.status).toBe(200)
    const text = new TextDecoder().decode(await res.bytes())
    expect(JSON.parse(text)).toMatchObject({ client: 'alice', previous: [{ id: 'cfg:0', expiresAt: T0 + 600_000 }] })
    expect(await upload(sys, NEW_KEY)).toBe(201)
    expect(await upload(sys, API_KEY)).toBe(201)
    await sys.clock.advance(600_000)
    expect(await upload(sys, API_KEY)).toBe(401)
    expect(await upload(sys, NEW_KEY)).toBe(201)
    // A new client by hash only; then every key of alice removed at once.
    const bob = await sys.request('PUT', '/admin/api-keys/bob', adminHeaders(sys), JSON.stringify({ keyHash: `sha256:${'ab'.repeat(32)}`, maxBytes: '1KiB' }))
    expect(bob.status).toBe(200)
    await bob.dump()
    const del = await sys.request('DELETE', '/admin/api-keys/alice', adminHeaders(sys))
    expect(await readJson(del)).toEqual({ client: 'alice', removed: 1 })
    expect(await upload(sys, NEW_KEY)).toBe(401)
    const metrics = await sys.interop.metricsText()
    expect(metrics).toMatch(/admin_changes_total\{kind="api_key",service="interop"\} 3/)
    const everything = [text, metrics, ...lines].join('\n')
    for (const key of [NEW_KEY, API_KEY]) expect(everything).not.toContain(key)
  })

  it('refuse bad input with 400 and change nothing', async () => {
    sys = await system()
    const h = adminHeaders(sys)
    for (const [path, body, field] of [
      ['/admin/webhooks/github/secret', { secret: 'short' }, 'secret'],
      ['/admin/webhooks/standard/secret', { secret: 'not base64 at all, not whsec' }, 'secret'],
      ['/admin/webhooks/github/secret', { secret: NEW_GH, overlapMs: -1 }, 'overlapMs'],
      ['/admin/api-keys/alice', { key: NEW_KEY, keyHash: `sha256:${'00'.repeat(32)}` }, 'key'],
      ['/admin/api-keys/alice', { keyHash: 'sha256:nothex' }, 'keyHash'],
      ['/admin/api-keys/alice', { key: NEW_KEY, extra: 1 }, undefined],
    ] as const) {
      const res = await sys.request('PUT', path, h, JSON.stringify(body))
      expect(res.status, JSON.stringify(body)).toBe(400)
      const env = (await readJson<{ error: { code: string; details: { field?: string } } }>(res)).error
      expect(env.code).toBe('Malformed')
      if (field !== undefined) expect(env.details.field).toBe(field)
    }
    const unknown = await sys.request('PUT', '/admin/webhooks/gitlab/secret', h, JSON.stringify({ secret: NEW_GH }))
    expect(unknown.status).toBe(404)
    await unknown.dump()
    expect(await deliver(sys, SECRETS.github, 'unchanged')).toBe(202)
    expect(await upload(sys, API_KEY)).toBe(201)
  })

  it('with a dataDir: a rotation is durable (0600 file) and survives a restart; the overlap too', async () => {
    const tmp = await tempDir('ron-interop-admin-')
    dirs.push(tmp)
    sys = await system({ dataDir: tmp.dir })
    const res = await sys.request('PUT', '/admin/webhooks/github/secret', adminHeaders(sys), JSON.stringify({ secret: NEW_GH, overlapMs: HOUR }))
    expect(res.status).toBe(200)
    await res.dump()
    const file = join(tmp.dir, 'admin-credentials.json')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(await readFile(file, 'utf8')).toContain(NEW_GH)
    await sys.close()
    sys = await system({ dataDir: tmp.dir })
    expect(await deliver(sys, NEW_GH, 'after-restart')).toBe(202)
    expect(await deliver(sys, SECRETS.github, 'old-in-overlap')).toBe(202)
    await sys.clock.advance(HOUR)
    expect(await deliver(sys, SECRETS.github, 'old-after-overlap')).toBe(401)
  })

  it('a disk that refuses the write: 503 with the fault, nothing changes', async () => {
    const fs = await mountTmpfs()
    if (fs === undefined) return
    try {
      sys = await system({ dataDir: fs.path })
      await fs.fill()
      const res = await sys.request('PUT', '/admin/webhooks/github/secret', adminHeaders(sys), JSON.stringify({ secret: NEW_GH }))
      expect(res.status).toBe(503)
      expect((await readJson<{ error: { code: string; details: { reason: string } } }>(res)).error).toMatchObject({ code: 'NotReady', details: { reason: 'disk_full' } })
      await fs.unfill()
      expect(await deliver(sys, NEW_GH, 'refused')).toBe(401)
      expect(await deliver(sys, SECRETS.github, 'kept')).toBe(202)
    } finally {
      await sys?.close()
      sys = undefined
      await fs.close()
    }
  })
})
