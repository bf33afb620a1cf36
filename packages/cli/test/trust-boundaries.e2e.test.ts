/**
 * Issue 20 against a real `ron-node` process (the built binary): the escalation chain and the
 * revoke-the-parent-then-use-the-child chain, replayed over HTTP as an attacker holding a token
 * would, and refused.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ALL_SCOPES } from '@ron/core'
import { assertBuilt, firstJsonLine, killAll, spawnCli, type Proc } from './helpers.js'

interface Summary {
  admin: string
  services: Record<string, string>
  tokenFile: string
}

let root: string
let proc: Proc
let node: Summary
let admin: string

beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-trust-'))
  proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', join(root, 'data'), '--log-level', 'warn'])
  node = await firstJsonLine<Summary>(proc, 60_000)
  admin = (await readFile(node.tokenFile, 'utf8')).trim()
})
afterEach(() => {
  // The node is shared by the tests of this file; only a crash would end it early.
  expect(proc.child.exitCode).toBeNull()
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

interface Answer {
  status: number
  body: { token?: string; jti?: string; revoked?: string[]; error?: { code: string; details: Record<string, unknown> } }
}

async function call(service: string, method: string, path: string, token: string | undefined, body?: unknown): Promise<Answer> {
  const res = await fetch(`${node.services[service]}${path}`, {
    method,
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) }
}

const put = (token: string, body: string): Promise<Answer> => call('storage', 'PUT', '/o', token, body)

describe('a token holder against a real ron-node (issue 20)', () => {
  it('the escalation chain is refused: admin attenuated to passport:issue + maxBytes 10 cannot issue anything broader', async () => {
    const child = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token: admin, scope: ['passport:issue'], ttlSec: 60, caveats: { maxBytes: 10 } })
    expect(child.status).toBe(200)
    const asChild = child.body.token!
    // Today's attack: all 16 scopes, an hour, no caveats.
    const all = await call('passport', 'POST', '/v1/passport/issue', asChild, { sub: 'x', aud: ['storage', 'registry', 'passport', 'index', 'interop', 'node'], scope: [...ALL_SCOPES], ttlSec: 3600 })
    expect([all.status, all.body.error?.details['reason']]).toEqual([403, 'widen'])
    // Each smaller widening alone is refused too.
    for (const req of [
      { sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 30 },
      { sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 3600 },
      { sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30, caveats: { maxBytes: 1_000_000 } },
      { sub: 'node:n0123456789abcdef', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30 },
    ]) {
      const r = await call('passport', 'POST', '/v1/passport/issue', asChild, req)
      expect(r.status, JSON.stringify(req)).toBe(403)
    }
    // The child cannot act as the node's admin either.
    const reload = await fetch(`${node.admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${asChild}` } })
    expect([401, 403]).toContain(reload.status)
    await reload.body?.cancel()
  })

  it('revoking a parent revokes what was minted from it, by issue and by attenuation, on storage at once', async () => {
    const parent = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token: admin, scope: ['passport:issue', 'storage:write'], ttlSec: 600 })
    expect(parent.status).toBe(200)
    const issued = await call('passport', 'POST', '/v1/passport/issue', parent.body.token, { sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 300 })
    const attenuated = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token: issued.body.token, ttlSec: 60, caveats: { maxBytes: 1024 } })
    expect([issued.status, attenuated.status]).toEqual([200, 200])
    expect((await put(issued.body.token!, 'before the revocation')).status).toBe(201)
    const revoked = await call('passport', 'POST', '/v1/passport/revoke', admin, { jti: parent.body.jti })
    expect(revoked.status).toBe(202)
    expect(new Set(revoked.body.revoked)).toEqual(new Set([parent.body.jti, issued.body.jti, attenuated.body.jti]))
    for (const t of [issued.body.token!, attenuated.body.token!]) {
      const r = await put(t, 'after the revocation')
      expect([r.status, r.body.error?.details['reason']]).toEqual([401, 'revoked'])
    }
    // And nothing more is minted from the revoked subtree.
    const again = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token: issued.body.token, ttlSec: 30 })
    expect(again.status).toBe(401)
    // The admin token itself is untouched.
    expect((await put(admin, 'admin still writes')).status).toBe(201)
  })

  it('caveat holes are closed: a pathPrefix with .. and a __proto__ caveat are refused', async () => {
    const dotdot = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token: admin, scope: ['storage:write'], caveats: { pathPrefix: '/o/a/../b' } })
    expect(dotdot.status).toBe(400)
    const proto = await call('passport', 'POST', '/v1/passport/attenuate', undefined, `{"token":"${admin}","caveats":{"__proto__":{"maxBytes":1}}}`)
    expect(proto.status).toBe(400)
  })

  it('a key rotation retires the old admin token at once on every service (it used to verify for up to 60 s); what it minted lives on', async () => {
    const old = admin
    const minted = await call('passport', 'POST', '/v1/passport/issue', old, { sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    expect(minted.status).toBe(200)
    const rotated = await call('passport', 'POST', '/v1/passport/rotate', old)
    expect(rotated.status).toBe(200)
    // When the rotation answers, the token file already holds the new token (and later tests use it).
    admin = (await readFile(node.tokenFile, 'utf8')).trim()
    expect(admin).not.toBe(old)
    // No wait: every service refuses the old token as revoked, the node's admin routes too.
    const attempts: Array<[string, Promise<Answer>]> = [
      ['storage', put(old, 'old admin token')],
      ['passport', call('passport', 'POST', '/v1/passport/issue', old, { sub: 'x', aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })],
      ['index', call('index', 'PUT', '/names/rotated.site', old, { manifestAddress: `b3:${'0'.repeat(64)}` })],
      ['registry', call('registry', 'POST', '/registry/proposals', old, { payload: { schemaVersion: 1, items: [] } })],
    ]
    for (const [service, attempt] of attempts) {
      const r = await attempt
      expect([r.status, r.body.error?.details['reason']], service).toEqual([401, 'revoked'])
    }
    const reload = await fetch(`${node.admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${old}` } })
    expect(reload.status).toBe(401)
    await reload.body?.cancel()
    // The new token works; retiring is not revoking: what the old one issued still writes.
    expect((await put(admin, 'new admin token')).status).toBe(201)
    expect((await put(minted.body.token!, 'minted before the rotation')).status).toBe(201)
  })

  it('the admin routes of index and interop refuse every token without their admin scope, in the SPEC envelope, and change nothing', async () => {
    // The tokens a non-admin really holds: the scopes of a node's service token (writes on storage
    // and index), and one service's admin scope used on the other's admin routes.
    const mint = async (req: object): Promise<string> => {
      const r = await call('passport', 'POST', '/v1/passport/issue', admin, { sub: 'mallory', ttlSec: 300, ...req })
      expect(r.status, JSON.stringify([req, r.body])).toBe(200)
      return r.body.token!
    }
    const write = await mint({ aud: ['storage', 'index'], scope: ['storage:write', 'storage:read', 'index:write', 'index:announce'] })
    const indexAdmin = await mint({ aud: ['index'], scope: ['index:admin'] })
    const interopAdmin = await mint({ aud: ['interop'], scope: ['interop:admin'] })
    // Who holds what, and the refusal each gets: [status, details.reason].
    const holders: Record<string, Array<[string, string | undefined, [number, string]]>> = {
      index: [
        ['write token', write, [403, 'missing_scope']],
        ['interop:admin token', interopAdmin, [401, 'wrong_audience']],
        ['no token', undefined, [401, 'missing']],
      ],
      interop: [
        ['write token', write, [401, 'wrong_audience']],
        ['index:admin token', indexAdmin, [401, 'wrong_audience']],
        ['no token', undefined, [401, 'missing']],
      ],
    }
    const key = `b3:${'a'.repeat(64)}`
    const routes: Array<[string, string, string, unknown?, Record<string, string>?]> = [
      ['index', 'POST', '/admin/reindex', undefined, { 'idempotency-key': 'mallory-1' }],
      ['index', 'GET', '/admin/pins'],
      ['index', 'PUT', `/admin/pins/${key}`],
      ['index', 'DELETE', `/admin/pins/${key}`],
      ['interop', 'GET', '/admin/credentials'],
      ['interop', 'PUT', '/admin/webhooks/github/secret', { secret: 'mallory-knows-this-secret' }],
      ['interop', 'PUT', '/admin/webhooks/standard/secret', { secret: `whsec_${Buffer.from('mallory-secret-32-bytes-long!!!!').toString('base64')}`, overlapMs: 0 }],
      ['interop', 'PUT', '/admin/api-keys/mallory', { key: 'mallory-api-key-0123456789' }],
      ['interop', 'DELETE', '/admin/api-keys/mallory'],
    ]
    const state = async (): Promise<unknown> => {
      const pins = await call('index', 'GET', '/admin/pins', admin)
      const creds = await call('interop', 'GET', '/admin/credentials', admin)
      expect([pins.status, creds.status]).toEqual([200, 200])
      const metrics = await fetch(`${node.admin}/metrics`, { headers: { authorization: `Bearer ${admin}` } })
      const counters = (await metrics.text()).split('\n').filter((l) => /^(index_admin_total|index_pinned_keys|interop_admin_changes_total|admin_changes_total)/.test(l))
      return { pins: pins.body, creds: creds.body, counters }
    }
    const before = await state()
    for (const [service, method, path, body, headers] of routes) {
      for (const [who, token, refusal] of holders[service]!) {
        const res = await fetch(`${node.services[service]}${path}`, {
          method,
          headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
        const answer = (await res.json()) as Answer['body']
        const what = `${service} ${method} ${path} with ${who}`
        expect([res.status, answer.error?.details['reason']], what).toEqual(refusal)
        expect(answer.error?.code, what).toBe(res.status === 401 ? 'Unauthorized' : 'Forbidden')
      }
    }
    // Nothing the refused calls asked for happened (no pin, no credential, no admin counter moved),
    // and the routes are alive: the admin token is served by them.
    const after = (await state()) as { counters: string[] }
    expect(after).toEqual(before)
    expect(after.counters.length).toBeGreaterThan(0)
    const reindex = await fetch(`${node.services['index']}/admin/reindex`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'idempotency-key': 'admin-1' } })
    expect(reindex.status).toBe(202)
    await reindex.body?.cancel()
  })
})
