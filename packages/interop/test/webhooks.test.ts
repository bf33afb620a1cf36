import { afterEach, describe, expect, it } from 'vitest'
import { addressOf } from '@ron/core'
import { MemoryAuditSink, fetchAndVerifyReceipt, signWebhook, verifyReceipt, type WebhookProvider } from '../src/index.js'
import { SECRETS, T0, readJson, system, type System } from './helpers.js'

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

const send = (s: System, w: ReturnType<typeof signWebhook>) => s.request(w.method, w.path, w.headers, w.body)

describe('POST /webhooks/:provider', () => {
  it.each(['github', 'slack', 'stripe', 'standard'] as WebhookProvider[])('%s: a signed delivery is acknowledged with the address of its stored receipt', async (provider) => {
    sys = await system()
    const body = JSON.stringify({ id: 'evt_1', event_id: 'Ev1', hello: provider })
    const w = signWebhook({ provider, secret: SECRETS[provider], body, nowMs: T0, deliveryId: 'd-1' })
    const res = await send(sys, w)
    expect(res.status).toBe(202)
    const out = await readJson<{ accepted: boolean; receipt: string }>(res)
    expect(out.accepted).toBe(true)
    // The receipt is in storage and re-verifies with the secret, without the replay window.
    const stored = await sys.storage.store.open(out.receipt as never)
    expect(stored).toBeDefined()
    await stored?.close()
    const later = await fetchAndVerifyReceipt(sys.transport, 'storage', out.receipt, () => [SECRETS[provider]])
    expect(later.ok).toBe(true)
    expect(later.receipt.bodyB3).toBe(addressOf(new TextEncoder().encode(body)))
    // Whoever does not hold the secret cannot make it verify.
    const bytes = new Uint8Array(await (await sys.transport.request('storage', { method: 'GET', path: `/o/${out.receipt}` })).bytes())
    expect(verifyReceipt(bytes, [provider === 'standard' ? 'whsec_b3RoZXI=' : 'other']).ok).toBe(false)
  })

  it('a repeated delivery answers 200 with the same receipt and stores nothing new', async () => {
    sys = await system()
    const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"a":1}', nowMs: T0, deliveryId: 'dup-1' })
    const first = await readJson<{ receipt: string }>(await sys.request(w.method, w.path, { ...w.headers, 'x-corr-id': 'corr-webhook-1' }, w.body))
    const again = await send(sys, w)
    expect(again.status).toBe(200)
    expect(await readJson(again)).toEqual({ accepted: true, receipt: first.receipt, duplicate: true })
    await sys.clock.flush()
    const events = (sys.interop.auditSink as MemoryAuditSink).events()
    expect(events.map((e) => e.decision)).toEqual(['accept', 'duplicate'])
    expect(events[0]).toMatchObject({ seq: 1, kind: 'webhook', provider: 'github', requestId: 'corr-webhook-1', receipt: first.receipt, payloadB3: addressOf(w.body) })
    expect(events[1]?.seq).toBe(2)
  })

  it('refuses tampered bodies, wrong secrets, stale and future timestamps and missing headers with 401 and the reason, counted per provider', async () => {
    sys = await system()
    const s = sys
    const w = signWebhook({ provider: 'slack', secret: SECRETS.slack, body: '{"x":1}', nowMs: T0 })
    const cases: Array<[string, Promise<Awaited<ReturnType<typeof send>>>]> = [
      ['bad_signature', s.request('POST', '/webhooks/slack', w.headers, '{"x":2}')],
      ['bad_signature', send(s, signWebhook({ provider: 'slack', secret: 'wrong', body: '{"x":1}', nowMs: T0 }))],
      ['stale_timestamp', send(s, signWebhook({ provider: 'slack', secret: SECRETS.slack, body: '{"x":1}', nowMs: T0 - 301_000 }))],
      ['stale_timestamp', send(s, signWebhook({ provider: 'slack', secret: SECRETS.slack, body: '{"x":1}', nowMs: T0 + 301_000 }))],
      ['missing_header', s.request('POST', '/webhooks/slack', { 'x-slack-signature': w.headers['x-slack-signature']! }, '{"x":1}')],
    ]
    for (const [reason, p] of cases) {
      const res = await p
      expect(res.status).toBe(401)
      expect(await readJson(res)).toMatchObject({ error: { code: 'Unauthorized', details: { reason, provider: 'slack' } } })
    }
    const metrics = await sys.interop.metricsText()
    expect(metrics).toMatch(/webhook_verify_total\{provider="slack",result="bad_signature",service="interop"\} 2/)
    expect(metrics).toMatch(/webhook_verify_total\{provider="slack",result="stale_timestamp",service="interop"\} 2/)
    expect(metrics).toMatch(/webhook_verify_total\{provider="slack",result="missing_header",service="interop"\} 1/)
    await sys.clock.flush()
    const denied = (sys.interop.auditSink as MemoryAuditSink).events()
    expect(denied.every((e) => e.decision === 'deny')).toBe(true)
    // Every refusal still carries the b3: hash of the body it refused (computed off the request path).
    const b3 = (text: string): string => addressOf(new TextEncoder().encode(text))
    expect(denied.map((e) => e.payloadB3).sort()).toEqual([b3('{"x":2}'), ...Array<string>(4).fill(b3('{"x":1}'))].sort())
    expect(denied.map((e) => e.reason).sort()).toEqual(['bad_signature', 'bad_signature', 'missing_header', 'stale_timestamp', 'stale_timestamp'])
  })

  it('an unconfigured provider is 404', async () => {
    sys = await system({ webhooks: { providers: { github: { secrets: ['x'] } } } })
    const res = await send(sys, signWebhook({ provider: 'slack', secret: 'x', body: '{}', nowMs: T0 }))
    expect(res.status).toBe(404)
  })

  it('secret rotation: old and new secrets verify while both are active; after the reload only the new one', async () => {
    sys = await system({ webhooks: { providers: { github: { secrets: ['new-secret', 'old-secret'] } } } })
    for (const secret of ['old-secret', 'new-secret']) {
      const res = await send(sys, signWebhook({ provider: 'github', secret, body: `{"s":"${secret}"}`, nowMs: T0 }))
      expect(res.status).toBe(202)
    }
    await sys.interop.reload({ webhooks: { providers: { github: { secrets: ['new-secret'] } } } })
    expect((await send(sys, signWebhook({ provider: 'github', secret: 'old-secret', body: '{"s":2}', nowMs: T0 }))).status).toBe(401)
    expect((await send(sys, signWebhook({ provider: 'github', secret: 'new-secret', body: '{"s":2}', nowMs: T0 }))).status).toBe(202)
  })

  it('storage slower than the deadline: 504 Timeout with Retry-After, nothing enters dedupe, the retry succeeds', async () => {
    sys = await system()
    sys.slow.stall()
    const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"slow":1}', nowMs: T0, deliveryId: 'slow-1' })
    const pending = send(sys, w)
    await sys.clock.advance(2000)
    const res = await pending
    expect(res.status).toBe(504)
    expect(res.headers['retry-after']).toBe('1')
    expect(await readJson(res)).toMatchObject({ error: { code: 'Timeout' } })
    sys.slow.release()
    const retry = await send(sys, w)
    expect(retry.status).toBe(202)
  })

  it('a replay that changes only unsigned parts (GitHub delivery id, hex case of the MAC) is still a duplicate', async () => {
    sys = await system()
    const gh = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"push":1}', nowMs: T0, deliveryId: 'gh-1' })
    const first = await readJson<{ receipt: string }>(await send(sys, gh))
    // X-GitHub-Delivery is not covered by the signature: an attacker replaying a captured delivery can change it.
    const replayed = await send(sys, { ...gh, headers: { ...gh.headers, 'x-github-delivery': 'gh-forged' } })
    expect(replayed.status).toBe(200)
    expect(await readJson(replayed)).toEqual({ accepted: true, receipt: first.receipt, duplicate: true })
    // Hex digits may be written in either case: the same MAC, the same delivery.
    const upper = await send(sys, { ...gh, headers: { ...gh.headers, 'x-github-delivery': 'gh-forged-2', 'x-hub-signature-256': `sha256=${gh.headers['x-hub-signature-256']!.slice(7).toUpperCase()}` } })
    expect(upper.status).toBe(200)
    // A Slack slash command carries no event id: the same signed request under an upper-cased MAC is the same delivery.
    const slash = signWebhook({ provider: 'slack', secret: SECRETS.slack, body: 'command=%2Fron&text=hi', nowMs: T0 })
    expect((await send(sys, slash)).status).toBe(202)
    const slashUpper = await send(sys, { ...slash, headers: { ...slash.headers, 'x-slack-signature': `v0=${slash.headers['x-slack-signature']!.slice(3).toUpperCase()}` } })
    expect(slashUpper.status).toBe(200)
  })

  it('storage answering 2xx with another address or with no JSON is a 503 NotReady, never a 500, and nothing enters dedupe', async () => {
    sys = await system()
    const answers = [
      { status: 201, body: JSON.stringify({ address: addressOf(new Uint8Array([1])), size: 1 }) },
      { status: 201, body: '<html>proxy error</html>' },
    ]
    for (const a of answers) {
      const unmount = sys.transport.mount('storage', { dispatch: () => Promise.resolve({ status: a.status, headers: { 'content-type': 'application/json' }, body: (async function* () { yield new TextEncoder().encode(a.body) })() }) })
      const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"odd":1}', nowMs: T0 })
      const res = await send(sys, w)
      expect(res.status).toBe(503)
      expect(await readJson(res)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'storage' } } })
      unmount()
    }
    sys.transport.mount('storage', sys.slow)
    // Nothing was remembered: the same delivery is stored for real now.
    const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"odd":1}', nowMs: T0 })
    expect((await send(sys, w)).status).toBe(202)
  })

  it('Slack URL verification: the challenge is echoed with 200 (what Slack requires to accept the request URL), after the receipt is stored', async () => {
    sys = await system()
    const body = JSON.stringify({ token: 'legacy', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' })
    const w = signWebhook({ provider: 'slack', secret: SECRETS.slack, body, nowMs: T0 })
    const res = await send(sys, w)
    expect(res.status).toBe(200)
    const out = await readJson<{ challenge: string; receipt: string; accepted: boolean }>(res)
    expect(out).toMatchObject({ accepted: true, challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' })
    expect((await fetchAndVerifyReceipt(sys.transport, 'storage', out.receipt, () => [SECRETS.slack])).ok).toBe(true)
  })

  it('a provider hanging up while its receipt is being stored does not cancel the store: its retry gets 200 and the same receipt', async () => {
    sys = await system()
    sys.slow.stall()
    const w = signWebhook({ provider: 'standard', secret: SECRETS.standard, body: '{"hangup":1}', nowMs: T0, deliveryId: 'msg_hangup' })
    const ac = new AbortController()
    const gone = sys.transport.request('interop', { method: w.method, path: w.path, headers: w.headers, body: w.body, signal: ac.signal })
    await sys.clock.flush()
    expect(sys.slow.putsWaiting).toBe(1)
    ac.abort(new Error('provider hung up'))
    await expect(gone).rejects.toThrow()
    sys.slow.release()
    await sys.clock.flush()
    const retry = await send(sys, w)
    expect(retry.status).toBe(200)
    expect(await readJson(retry)).toMatchObject({ accepted: true, duplicate: true })
  })

  it('a concurrent duplicate joins the pending store instead of storing twice', async () => {
    sys = await system()
    sys.slow.stall()
    const w = signWebhook({ provider: 'standard', secret: SECRETS.standard, body: '{"c":1}', nowMs: T0, deliveryId: 'msg_same' })
    const a = send(sys, w)
    const b = send(sys, w)
    await sys.clock.flush()
    expect(sys.slow.putsWaiting).toBe(1)
    sys.slow.release()
    const [ra, rb] = await Promise.all([a, b])
    expect(ra.status).toBe(202)
    expect(rb.status).toBe(200)
    expect((await readJson<{ receipt: string }>(rb)).receipt).toBe((await readJson<{ receipt: string }>(ra)).receipt)
  })
})
