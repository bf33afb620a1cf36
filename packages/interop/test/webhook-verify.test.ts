import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { signWebhook, verifyWebhook, type WebhookHeaders, type WebhookProvider } from '../src/index.js'

function vectors<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`./vectors/${name}`, import.meta.url), 'utf8')) as T
}
const enc = (s: string): Uint8Array => new TextEncoder().encode(s)

const gh = vectors<{ vectors: Array<{ secret: string; payload: string; signature: string }> }>('github.json').vectors[0]!
const slack = vectors<{ vectors: Array<{ signingSecret: string; timestamp: string; body: string; signature: string }> }>('slack.json').vectors[0]!
const std = vectors<{
  vectors: Array<{ secret: string; msgId: string; timestamp: number; payload: string; signature: string }>
  invalidSignatures: string[]
}>('standard-webhooks.json')
const sv = std.vectors[0]!

describe('published vectors', () => {
  it('GitHub: the documented X-Hub-Signature-256 example verifies', () => {
    const v = verifyWebhook({ provider: 'github', body: enc(gh.payload), headers: { 'x-hub-signature-256': gh.signature, 'x-github-delivery': 'd-1' }, secrets: [gh.secret], nowMs: 0 })
    expect(v).toMatchObject({ ok: true, deliveryId: 'd-1', secretIndex: 0 })
    expect(signWebhook({ provider: 'github', secret: gh.secret, body: gh.payload }).headers['x-hub-signature-256']).toBe(gh.signature)
  })

  it('Slack: the documented v0 example verifies at its own timestamp', () => {
    const nowMs = Number(slack.timestamp) * 1000 + 10_000
    const v = verifyWebhook({
      provider: 'slack',
      body: enc(slack.body),
      headers: { 'x-slack-signature': slack.signature, 'x-slack-request-timestamp': slack.timestamp },
      secrets: [slack.signingSecret],
      nowMs,
    })
    expect(v).toMatchObject({ ok: true, timestampSec: Number(slack.timestamp) })
    expect(signWebhook({ provider: 'slack', secret: slack.signingSecret, body: slack.body, nowMs: Number(slack.timestamp) * 1000 }).headers['x-slack-signature']).toBe(slack.signature)
  })

  it('Standard Webhooks: the reference sign vector, with and without the whsec_ prefix', () => {
    const headers = { 'webhook-id': sv.msgId, 'webhook-timestamp': String(sv.timestamp), 'webhook-signature': sv.signature }
    for (const secret of [sv.secret, sv.secret.slice('whsec_'.length)]) {
      const v = verifyWebhook({ provider: 'standard', body: enc(sv.payload), headers, secrets: [secret], nowMs: sv.timestamp * 1000 })
      expect(v).toMatchObject({ ok: true, deliveryId: sv.msgId })
    }
    const signed = signWebhook({ provider: 'standard', secret: sv.secret, body: sv.payload, nowMs: sv.timestamp * 1000, deliveryId: sv.msgId })
    expect(signed.headers['webhook-signature']).toBe(sv.signature)
  })

  it('Standard Webhooks: the reference invalid signatures are refused, and a valid one among several passes', () => {
    const base = { 'webhook-id': sv.msgId, 'webhook-timestamp': String(sv.timestamp) }
    for (const bad of std.invalidSignatures) {
      const v = verifyWebhook({ provider: 'standard', body: enc(sv.payload), headers: { ...base, 'webhook-signature': bad }, secrets: [sv.secret], nowMs: sv.timestamp * 1000 })
      expect(v).toMatchObject({ ok: false, reason: 'bad_signature' })
    }
    const several = [std.invalidSignatures[0], std.invalidSignatures[3], sv.signature, std.invalidSignatures[0]].join(' ')
    const v = verifyWebhook({ provider: 'standard', body: enc(sv.payload), headers: { ...base, 'webhook-signature': several }, secrets: [sv.secret], nowMs: sv.timestamp * 1000 })
    expect(v.ok).toBe(true)
  })

  it('Stripe: t=,v1= by construction, with several v1 signatures', () => {
    const nowMs = 1_700_000_000_000
    const s = signWebhook({ provider: 'stripe', secret: 'whsec_test', body: '{"id":"evt_1"}', nowMs })
    const v = verifyWebhook({ provider: 'stripe', body: enc('{"id":"evt_1"}'), headers: s.headers, secrets: ['whsec_test'], nowMs })
    expect(v).toMatchObject({ ok: true, deliveryId: 'evt_1' })
    const sig = s.headers['stripe-signature']!
    const withOther = sig.replace(',v1=', `,v1=${'0'.repeat(64)},v0=abc,v1=`)
    expect(verifyWebhook({ provider: 'stripe', body: enc('{"id":"evt_1"}'), headers: { 'stripe-signature': withOther }, secrets: ['whsec_test'], nowMs }).ok).toBe(true)
  })
})

const PROVIDERS: WebhookProvider[] = ['github', 'slack', 'stripe', 'standard']
const SECRET: Record<WebhookProvider, string> = { github: 'gh-secret', slack: 'slack-secret', stripe: 'whsec_stripe', standard: 'whsec_c2VjcmV0LWJ5dGVzLWhlcmU=' }
const NOW = 1_750_000_000_000

describe.each(PROVIDERS)('%s failures', (provider) => {
  const body = '{"id":"evt_x","event_id":"Ev1","hello":"world"}'
  const signed = signWebhook({ provider, secret: SECRET[provider], body, nowMs: NOW, deliveryId: 'delivery-1' })
  const verify = (b: string, headers: WebhookHeaders, secrets = [SECRET[provider]], nowMs = NOW) =>
    verifyWebhook({ provider, body: enc(b), headers, secrets, nowMs })

  it('accepts the signed request', () => {
    expect(verify(body, signed.headers).ok).toBe(true)
  })

  it('refuses a tampered body with bad_signature', () => {
    expect(verify(body.replace('world', 'World'), signed.headers)).toMatchObject({ ok: false, reason: 'bad_signature' })
  })

  it('refuses a wrong secret with bad_signature', () => {
    const wrong = provider === 'standard' ? 'whsec_b3RoZXItc2VjcmV0' : 'other'
    expect(verify(body, signed.headers, [wrong])).toMatchObject({ ok: false, reason: 'bad_signature' })
  })

  it('accepts any active secret (rotation) and reports which one verified', () => {
    const old = provider === 'standard' ? 'whsec_b2xkLXNlY3JldA==' : 'old-secret'
    expect(verify(body, signed.headers, [old, SECRET[provider]])).toMatchObject({ ok: true, secretIndex: 1 })
  })

  it('refuses missing signature headers with missing_header', () => {
    const sigHeader = { github: 'x-hub-signature-256', slack: 'x-slack-signature', stripe: 'stripe-signature', standard: 'webhook-signature' }[provider]
    const headers = { ...signed.headers }
    delete headers[sigHeader]
    expect(verify(body, headers)).toMatchObject({ ok: false, reason: 'missing_header' })
  })

  if (provider !== 'github') {
    it('refuses timestamps older or newer than 5 minutes with stale_timestamp, accepts them at the edge', () => {
      expect(verify(body, signed.headers, undefined, NOW + 301_000)).toMatchObject({ ok: false, reason: 'stale_timestamp' })
      expect(verify(body, signed.headers, undefined, NOW - 301_000)).toMatchObject({ ok: false, reason: 'stale_timestamp' })
      expect(verify(body, signed.headers, undefined, NOW + 300_000).ok).toBe(true)
      expect(verify(body, signed.headers, undefined, NOW - 300_000).ok).toBe(true)
      // Re-verification of a stored receipt ignores the window.
      expect(verifyWebhook({ provider, body: enc(body), headers: signed.headers, secrets: [SECRET[provider]], nowMs: NOW + 86_400_000, checkTimestamp: false }).ok).toBe(true)
    })
  }
})

describe('fuzzing', () => {
  it('arbitrary signature headers never verify and never throw', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PROVIDERS), fc.dictionary(fc.constantFrom('x-hub-signature-256', 'x-slack-signature', 'x-slack-request-timestamp', 'stripe-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'), fc.string()), fc.uint8Array({ maxLength: 64 }), (provider, headers, body) => {
        const v = verifyWebhook({ provider, body, headers, secrets: [SECRET[provider]], nowMs: NOW })
        expect(v.ok).toBe(false)
        if (!v.ok) expect(['bad_signature', 'stale_timestamp', 'missing_header']).toContain(v.reason)
      }),
      { numRuns: 500, seed: 42 },
    )
  })

  it('Slack v0 base string: any body and timestamp round-trip, any one-byte change fails', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.integer({ min: -299, max: 299 }), fc.nat(), (body, skewSec, at) => {
        const s = signWebhook({ provider: 'slack', secret: 's3cret', body, nowMs: NOW + skewSec * 1000 })
        expect(verifyWebhook({ provider: 'slack', body, headers: s.headers, secrets: ['s3cret'], nowMs: NOW }).ok).toBe(true)
        const tampered = Uint8Array.from(body)
        tampered[at % body.length]! ^= 1
        expect(verifyWebhook({ provider: 'slack', body: tampered, headers: s.headers, secrets: ['s3cret'], nowMs: NOW })).toMatchObject({ ok: false, reason: 'bad_signature' })
        // The timestamp is part of the base string: a shifted timestamp inside the window fails too.
        const shifted = { ...s.headers, 'x-slack-request-timestamp': String(Number(s.headers['x-slack-request-timestamp']) + 1) }
        expect(verifyWebhook({ provider: 'slack', body, headers: shifted, secrets: ['s3cret'], nowMs: NOW }).ok).toBe(false)
      }),
      { numRuns: 200, seed: 7 },
    )
  })

  it('GitHub sha256= prefix: mangled prefixes and hex are bad_signature', () => {
    const body = enc('{"a":1}')
    const good = signWebhook({ provider: 'github', secret: 'k', body }).headers['x-hub-signature-256']!
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (junk) => {
        fc.pre(junk !== good)
        const v = verifyWebhook({ provider: 'github', body, headers: { 'x-hub-signature-256': junk }, secrets: ['k'], nowMs: NOW })
        expect(v.ok).toBe(false)
      }),
      { numRuns: 300, seed: 3 },
    )
    for (const variant of [good.toUpperCase(), `SHA256=${good.slice(7)}`, `sha1=${good.slice(7)}`, `${good} `, `sha256=${good.slice(7, 70)}`]) {
      expect(verifyWebhook({ provider: 'github', body, headers: { 'x-hub-signature-256': variant }, secrets: ['k'], nowMs: NOW })).toMatchObject({ ok: false, reason: 'bad_signature' })
    }
  })

  it('duplicate signature headers are refused', () => {
    const s = signWebhook({ provider: 'github', secret: 'k', body: 'x' })
    const sig = s.headers['x-hub-signature-256']!
    expect(verifyWebhook({ provider: 'github', body: enc('x'), headers: { 'x-hub-signature-256': [sig, sig] }, secrets: ['k'], nowMs: NOW })).toMatchObject({ ok: false, reason: 'bad_signature' })
  })
})
