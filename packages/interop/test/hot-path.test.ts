/**
 * The refusal path's cheap pieces (issue 14 item 8 work): cached HMAC key objects, the regex-free
 * hex decoder, and audit payload hashes computed off the request path (by the sink task, or when
 * a memory sink's events are read).
 */
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { addressOf, createServiceMetrics, Supervisor } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { AuditLog, MemoryAuditSink, signWebhook, type AuditEvent, type AuditSink } from '../src/index.js'
import { LAZY_HASH_MAX_BYTES } from '../src/audit.js'
import { KEY_CACHE_MAX, base64HmacKey, decodeHex32, decodeHex32Into, hmacKey, hmacKeyCacheSize, hmacSha256 } from '../src/webhooks/hmac.js'
import { WEBHOOK_PROVIDERS, verifyWebhook, webhookProvider } from '../src/webhooks/verify.js'
import { refusalBody, refusalCacheSize } from '../src/routes/webhooks.js'
import { talliedVerifyCounter } from '../src/metrics.js'
import { UnauthorizedError } from '@ron/core'

const event = (i: number) => ({ kind: 'webhook' as const, provider: 'github', requestId: `r${i}`, decision: 'deny' as const, reason: 'bad_signature', latency: '<10ms' })

describe('hmac key cache', () => {
  it('a cached key gives the same MAC as the string secret, per secret, and the cache stays bounded', () => {
    const body = Buffer.from('{"a":1}')
    for (let i = 0; i < KEY_CACHE_MAX * 2 + 3; i++) {
      const secret = `secret-${i}`
      expect(hmacSha256(secret, 'p:', body).equals(createHmac('sha256', secret).update('p:').update(body).digest())).toBe(true)
      expect(hmacKeyCacheSize()).toBeLessThanOrEqual(KEY_CACHE_MAX)
    }
    // The cache is keyed by the secret itself: two secrets never share a key object.
    expect(hmacKey('a')).not.toBe(hmacKey('b'))
    expect(hmacKey('a')).toBe(hmacKey('a'))
  })

  it('base64 (Standard Webhooks) keys are cached per secret too, an undecodable secret included', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef').toString('base64')}`
    const k = base64HmacKey(secret)
    expect(k).toBeDefined()
    expect(base64HmacKey(secret)).toBe(k)
    // The same bytes without the prefix are another cache entry, and the same key material.
    expect(base64HmacKey(secret.slice('whsec_'.length))?.export().equals(k!.export())).toBe(true)
    for (let i = 0; i < 2; i++) expect(base64HmacKey('not base64!')).toBeUndefined()
    expect(base64HmacKey('')).toBeUndefined()
    // A UTF-8 secret spelled like a base64 one is a different key: the two caches never mix.
    expect(hmacKey(secret).export().equals(k!.export())).toBe(false)
  })

  it('a rotated secret verifies at once and a removed one no longer does (the cache answers per secret)', () => {
    const body = Buffer.from('{"x":2}')
    const w = signWebhook({ provider: 'github', secret: 'old', body })
    const at = (secrets: string[]) => verifyWebhook({ provider: 'github', body, headers: w.headers, secrets, nowMs: Date.now() })
    expect(at(['old']).ok).toBe(true)
    expect(at(['new', 'old'])).toMatchObject({ ok: true, secretIndex: 1 })
    expect(at(['new'])).toMatchObject({ ok: false, reason: 'bad_signature' })
  })
})

describe('webhookProvider', () => {
  it('answers the constant provider string for a copy of its name, and undefined otherwise', () => {
    for (const p of WEBHOOK_PROVIDERS) {
      const copy = `${p.slice(0, 1)}${p.slice(1)}` // a different string object, same text
      expect(webhookProvider(copy)).toBe(p)
    }
    for (const bad of [undefined, '', 'GitHub', 'github ', 'gitlab', '__proto__', 'constructor']) expect(webhookProvider(bad)).toBeUndefined()
  })
})

describe('refusal envelope', () => {
  it('is exactly the UnauthorizedError envelope, escaping the message and the correlation id', () => {
    for (const [message, corrId] of [
      ['signature does not match any active secret', 'abc-1'],
      ['missing header x-hub-signature-256', 'we"ird\\id\u2028'],
    ] as const) {
      const text = refusalBody(message, corrId, 'bad_signature', 'github')
      const expected = new UnauthorizedError(`webhook refused: ${message}`, { details: { reason: 'bad_signature', provider: 'github' } }).toEnvelope(corrId)
      expect(JSON.parse(text)).toEqual(expected)
      // Built from cached parts: the same text again, and with another correlation id.
      expect(refusalBody(message, corrId, 'bad_signature', 'github')).toBe(text)
      expect(JSON.parse(refusalBody(message, 'other', 'bad_signature', 'github'))).toEqual(
        new UnauthorizedError(`webhook refused: ${message}`, { details: { reason: 'bad_signature', provider: 'github' } }).toEnvelope('other'),
      )
    }
  })

  it('keeps the parts per provider, reason and message, and stays bounded', () => {
    const a = JSON.parse(refusalBody('m', 'c', 'bad_signature', 'github')) as { error: { details: unknown } }
    const b = JSON.parse(refusalBody('m', 'c', 'missing_header', 'slack')) as { error: { details: unknown } }
    expect(a.error.details).toEqual({ reason: 'bad_signature', provider: 'github' })
    expect(b.error.details).toEqual({ reason: 'missing_header', provider: 'slack' })
    for (let i = 0; i < 500; i++) refusalBody(`message ${i}`, 'c', 'stale_timestamp', 'stripe')
    // 4 providers × 3 reasons × 64 messages at most.
    expect(refusalCacheSize()).toBeLessThanOrEqual(4 * 3 * 64)
    expect(JSON.parse(refusalBody('message 499', 'c', 'stale_timestamp', 'stripe'))).toMatchObject({ error: { message: 'webhook refused: message 499' } })
  })
})

describe('decodeHex32', () => {
  const hex = 'ab'.repeat(32)
  const bads = ['', hex.slice(2), `${hex}00`, `${hex.slice(0, 63)}g`, `g${hex.slice(1)}`, `${hex.slice(0, 30)}zz${hex.slice(32)}`, ` ${hex.slice(1)}`, `${hex.slice(0, 63)} `]

  it('accepts exactly 64 hex digits of either case and nothing else', () => {
    expect(decodeHex32(hex)?.toString('hex')).toBe(hex)
    expect(decodeHex32(hex.toUpperCase())?.toString('hex')).toBe(hex)
    for (const bad of bads) expect(decodeHex32(bad)).toBeUndefined()
  })

  it('decodeHex32Into accepts and refuses exactly what decodeHex32 does, reusing one buffer', () => {
    const into = Buffer.alloc(32)
    const other = '0f'.repeat(32)
    expect(decodeHex32Into(hex, into)).toBe(true)
    expect(into.toString('hex')).toBe(hex)
    expect(decodeHex32Into(other.toUpperCase(), into)).toBe(true)
    expect(into.toString('hex')).toBe(other)
    for (const bad of bads) expect(decodeHex32Into(bad, into)).toBe(false)
  })

  it('a forgery with a malformed or wrong MAC never verifies after a valid one used the shared buffer', () => {
    const body = Buffer.from('{"a":1}')
    const good = signWebhook({ provider: 'github', secret: 's', body })
    const sig = good.headers['x-hub-signature-256']!
    const verify = (signature: string) => verifyWebhook({ provider: 'github', body, headers: { ...good.headers, 'x-hub-signature-256': signature }, secrets: ['s'], nowMs: 0 })
    expect(verify(sig).ok).toBe(true)
    // Same first half, then a bad digit: the decoder stops, the leftover bytes of the last valid MAC must not count.
    expect(verify(`${sig.slice(0, 40)}zz${sig.slice(42)}`)).toMatchObject({ ok: false, reason: 'bad_signature' })
    expect(verify(`sha256=${'00'.repeat(32)}`)).toMatchObject({ ok: false, reason: 'bad_signature' })
    expect(verify(sig).ok).toBe(true)
  })
})

describe('webhook_verify_total tally', () => {
  it('counts are handed to prom-client at scrape time, once, and add up across scrapes', async () => {
    const metrics = createServiceMetrics({ service: 'interop' })
    const counter = metrics.counter('webhook_verify_total', 'test', ['provider', 'result'])
    const tally = talliedVerifyCounter(counter)
    const sample = (text: string, provider: string, result: string) =>
      Number(new RegExp(`webhook_verify_total\\{provider="${provider}",result="${result}",service="interop"\\} (\\d+)`).exec(text)?.[1] ?? NaN)
    for (let i = 0; i < 3; i++) tally.inc('github', 'bad_signature')
    tally.inc('slack', 'ok')
    let text = await metrics.text()
    expect(sample(text, 'github', 'bad_signature')).toBe(3)
    expect(sample(text, 'slack', 'ok')).toBe(1)
    text = await metrics.text() // a second scrape adds nothing new
    expect(sample(text, 'github', 'bad_signature')).toBe(3)
    tally.inc('github', 'bad_signature')
    tally.inc('stripe', 'missing_header')
    text = await metrics.text()
    expect(sample(text, 'github', 'bad_signature')).toBe(4)
    expect(sample(text, 'stripe', 'missing_header')).toBe(1)
  })

  it('a provider or result outside the known lists is counted directly', async () => {
    const metrics = createServiceMetrics({ service: 'interop' })
    const tally = talliedVerifyCounter(metrics.counter('webhook_verify_total', 'test', ['provider', 'result']))
    tally.inc('gitlab', 'ok')
    expect(await metrics.text()).toMatch(/webhook_verify_total\{provider="gitlab",result="ok",service="interop"\} 1/)
  })
})

describe('audit payload hashes off the request path', () => {
  it('a memory sink hashes a refusal payload only when its events are read, once; overwritten events are never hashed', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const sink = new MemoryAuditSink(2)
    const audit = new AuditLog({ sink, clock, metrics: metrics.sink })
    const sup = new Supervisor({ clock, metrics: metrics.sink })
    sup.spawn('audit-sink', (signal) => audit.run(signal))
    const bodies = [1, 2, 3].map((i) => Buffer.from(`{"n":${i}}`))
    bodies.forEach((b, i) => audit.emit(event(i + 1), b))
    await clock.flush()
    const events = sink.events()
    expect(events.map((e) => [e.seq, e.payloadB3])).toEqual([
      [2, addressOf(bodies[1]!)],
      [3, addressOf(bodies[2]!)],
    ])
    expect(sink.events()[0]).toBe(events[0]) // computed once, kept
    audit.close()
    await sup.shutdown(1000)
  })

  it('a memory sink keeps a copy of each payload in shared slabs, drops slabs no event needs, and hashes what was written', () => {
    const sink = new MemoryAuditSink(8)
    const bodies: Buffer[] = []
    for (let i = 0; i < 200; i++) {
      const b = Buffer.alloc(10_000 + i, i % 251)
      bodies.push(b)
      sink.writeLazy({ ...event(i), seq: i, at: 0 }, b)
      // The caller's buffer may be reused at once: the sink hashes its own copy.
      b.fill(0)
      // 8 events of about 10 KB need at most two 256 KiB slabs (the one filling and the one before).
      expect(sink.slabCount).toBeLessThanOrEqual(2)
    }
    const events = sink.events()
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 8 }, (_, k) => 192 + k))
    expect(events.map((e) => e.payloadB3)).toEqual(events.map((e) => addressOf(Buffer.alloc(10_000 + e.seq, e.seq % 251))))
    expect(sink.slabCount).toBeLessThanOrEqual(1) // read: only the slab being filled is kept
    const big = Buffer.alloc(LAZY_HASH_MAX_BYTES + 1, 9) // hashed at once, never held
    sink.writeLazy({ ...event(500), seq: 500, at: 0 }, big)
    big.fill(1)
    expect(sink.events().at(-1)?.payloadB3).toBe(addressOf(Buffer.alloc(LAZY_HASH_MAX_BYTES + 1, 9)))
  })

  it('a sink without writeLazy gets every event with its payloadB3 filled in by the sink task', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const written: AuditEvent[] = []
    const sink: AuditSink = { kind: 'list', write: (e) => void written.push({ ...e }) }
    const audit = new AuditLog({ sink, clock, metrics: metrics.sink })
    const sup = new Supervisor({ clock, metrics: metrics.sink })
    sup.spawn('audit-sink', (signal) => audit.run(signal))
    const small = Buffer.from('small')
    const big = Buffer.alloc(LAZY_HASH_MAX_BYTES + 1, 1) // hashed at emit: never held by the queue
    audit.emit(event(1), small)
    audit.emit(event(2), big)
    audit.emit({ ...event(3), payloadB3: 'b3:given' }, small) // a given hash wins
    audit.emit(event(4))
    await clock.flush()
    expect(written.map((e) => e.payloadB3)).toEqual([addressOf(small), addressOf(big), 'b3:given', undefined])
    audit.close()
    await sup.shutdown(1000)
  })

  it('a burst is written in order by one wake-up of the sink task, and the task waits again once idle', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const written: number[] = []
    const sink: AuditSink = { kind: 'list', write: (e) => void written.push(e.seq) }
    const audit = new AuditLog({ sink, clock, metrics: metrics.sink })
    const sup = new Supervisor({ clock, metrics: metrics.sink })
    sup.spawn('audit-sink', (signal) => audit.run(signal))
    for (let i = 1; i <= 50; i++) audit.emit(event(i))
    await clock.flush()
    await clock.flush()
    expect(written).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
    await clock.flush()
    audit.emit(event(51))
    await clock.flush()
    await clock.flush()
    expect(written.at(-1)).toBe(51)
    expect(audit.depth).toBe(0)
    audit.close()
    await sup.shutdown(1000)
  })

  it('events queued before shutdown are written with their hashes on close', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const sink = new MemoryAuditSink(8)
    const audit = new AuditLog({ sink, clock, metrics: metrics.sink })
    const body = Buffer.from('late')
    audit.emit(event(1), body)
    audit.close()
    await audit.run(new AbortController().signal)
    expect(sink.events()).toMatchObject([{ seq: 1, payloadB3: addressOf(body) }])
  })
})
