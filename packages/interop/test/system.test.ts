/**
 * The whole system on one MemoryTransport: real passport (issuance policy, service tokens through
 * core's token provider), real storage (verifying passport's keys, announcing to index), real index,
 * and interop between them.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, collectBytes, createTokenProvider } from '@ron/core'
import { VirtualClock, seededRandom } from '@ron/core/testing'
import { createIndexService } from '@ron/index'
import { createPassportService, passportMinter } from '@ron/passport'
import { createStorageService } from '@ron/storage'
import { closeOnVirtualTime } from './helpers.js'
import { createInteropService, fetchAndVerifyReceipt, hashApiKey, signWebhook, type MemoryAuditSink } from '../src/index.js'

const T0 = 1_800_000_000_000
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
})

async function wholeSystem() {
  const clock = new VirtualClock(T0)
  const transport = new MemoryTransport({ clock, timeoutMs: 60_000 })
  const passport = await createPassportService(
    {
      clock,
      // Nobody issues: interop attenuates its upload capabilities from its own storage:write token.
      policy: { maxTtlSec: 3600, callers: {} },
    },
    transport,
  )
  // Records what passport mints through its routes (the capabilities interop obtains).
  const minted: Array<{ path: string; status: number; body: unknown }> = []
  transport.mount('passport', {
    async dispatch(req) {
      const res = await passport.dispatch(req)
      if (req.url.startsWith('/v1/passport/attenuate') || req.url.startsWith('/v1/passport/issue')) {
        const bytes = await collectBytes(res.body)
        minted.push({ path: req.url, status: res.status, body: JSON.parse(new TextDecoder().decode(bytes)) as unknown })
        return { ...res, body: (async function* () {
          yield bytes
        })() }
      }
      return res
    },
  })
  const tokens = createTokenProvider({ minter: passportMinter(passport, { sub: 'node:n1' }), clock })
  const index = await createIndexService({ auth: { keys: passport.keys }, clock, random: seededRandom(3) }, transport)
  transport.mount('index', index)
  const storage = await createStorageService({ auth: { keys: passport.keys }, clock, random: seededRandom(4), tokens, announce: { target: 'index' } }, transport)
  transport.mount('storage', storage)
  const interop = await createInteropService(
    { webhooks: { providers: { github: { secrets: ['gh-secret'] } } }, apiKeys: [{ client: 'alice', keyHash: hashApiKey('alice-key'), maxBytes: 1 << 20 }] },
    transport,
    { clock, random: seededRandom(5), tokens },
  )
  transport.mount('interop', interop)
  cleanups.push(async () => {
    await closeOnVirtualTime(clock, interop.close())
    await closeOnVirtualTime(clock, storage.close())
    await closeOnVirtualTime(clock, index.close())
    tokens.close()
    await closeOnVirtualTime(clock, passport.close())
    await transport.close()
  })
  return { clock, transport, passport, storage, index, interop, tokens, minted }
}

describe('interop in the whole system', () => {
  it('POST /put end to end: passport attenuates the capability from the node token, storage stores, GET /o reads back through index', async () => {
    const s = await wholeSystem()
    const res = await s.transport.request('interop', { method: 'POST', path: '/put', headers: { 'x-api-key': 'alice-key' }, body: 'through the front door' })
    expect(res.status).toBe(201)
    const { address, size } = await res.json<{ address: string; size: number }>()
    expect(size).toBe(22)
    await s.clock.flush()
    const got = await s.transport.request('interop', { method: 'GET', path: `/o/${address}` })
    expect(got.status).toBe(200)
    expect(new TextDecoder().decode(await collectBytes(got.body))).toBe('through the front door')
    await s.clock.flush()
    const [event] = (s.interop.auditSink as MemoryAuditSink).events()
    expect(event).toMatchObject({ kind: 'put', client: 'alice', decision: 'accept', payloadB3: address })
    expect(event?.capabilityId).toMatch(/…$/)
  })

  it("the upload capability is attenuated from the node's storage:write token: never more than it, and revoked with it", async () => {
    const s = await wholeSystem()
    const res = await s.transport.request('interop', { method: 'POST', path: '/put', headers: { 'x-api-key': 'alice-key' }, body: 'capability check' })
    expect(res.status).toBe(201)
    await res.dump()
    expect(s.minted.map((m) => [m.path, m.status])).toEqual([['/v1/passport/attenuate', 200]])
    const cap = s.minted[0]!.body as { token: string; exp: number }
    const claims = JSON.parse(Buffer.from(cap.token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown> & { iat: number; exp: number; prf: string }
    const parent = await s.tokens.token({ aud: 'storage', scope: ['storage:write'] })
    const parentClaims = JSON.parse(Buffer.from(parent.split('.')[1]!, 'base64url').toString()) as { jti: string; ron: { maxBytes: number } }
    expect(claims).toMatchObject({ sub: 'node:n1', aud: ['storage'], scope: 'storage:write', prf: parentClaims.jti, ron: { maxBytes: 1 << 20 } })
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(60)
    expect(parentClaims.ron.maxBytes).toBe(1024 ** 3)
    // Revoking the node's token (a leak) reaches the capability attenuated from it.
    await s.passport.revoke(parentClaims.jti)
    await expect(s.passport.verifier.verify(cap.token, { audience: 'storage', scope: 'storage:write' })).rejects.toMatchObject({ details: { reason: 'revoked' } })
  })

  it('an upload over the client limit is refused by storage under the capability caveat', async () => {
    const s = await wholeSystem()
    async function* big(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 20; i++) yield new Uint8Array(64 * 1024)
    }
    // No content-length: the limit is enforced by storage from the capability's maxBytes caveat.
    const res = await s.transport.request('interop', { method: 'POST', path: '/put', headers: { 'x-api-key': 'alice-key' }, body: big() })
    expect(res.status).toBe(413)
  })

  it('a GitHub delivery is stored as a receipt with the node service token and re-verifies later from storage', async () => {
    const s = await wholeSystem()
    const w = signWebhook({ provider: 'github', secret: 'gh-secret', body: '{"zen":"Design for failure."}', nowMs: T0, deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958' })
    const res = await s.transport.request('interop', { method: w.method, path: w.path, headers: w.headers, body: w.body })
    expect(res.status).toBe(202)
    const { receipt } = await res.json<{ receipt: string }>()
    await s.clock.advance(6 * 60_000) // outside the 5-minute replay window
    const v = await fetchAndVerifyReceipt(s.transport, 'storage', receipt, () => ['gh-secret'])
    expect(v).toMatchObject({ ok: true, deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958', receipt: { provider: 'github' } })
  })
})
