import { describe, expect, it } from 'vitest'
import { addressOf, type Address } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { DedupeStore, decodeReceipt, encodeReceipt, signWebhook, verifyReceipt, verifyWebhook } from '../src/index.js'

const A = addressOf(new Uint8Array([1]))
const B = addressOf(new Uint8Array([2]))

describe('DedupeStore', () => {
  it('a key enters only once its receipt is stored, and is forgotten after the TTL', async () => {
    const clock = new VirtualClock(0)
    const d = new DedupeStore({ clock, ttlMs: 600_000 })
    let store!: (a: Address) => void
    const tracked = d.track('github:1', new Promise<Address>((r) => (store = r)))
    expect(d.lookup('github:1').kind).toBe('pending')
    expect(d.size).toBe(0)
    store(A)
    expect(await tracked).toBe(A)
    expect(d.lookup('github:1')).toEqual({ kind: 'stored', receipt: A })
    await clock.advance(599_999)
    expect(d.lookup('github:1').kind).toBe('stored')
    await clock.advance(1)
    expect(d.lookup('github:1').kind).toBe('new')
  })

  it('a failed store forgets the key (the provider retry starts afresh)', async () => {
    const d = new DedupeStore({ clock: new VirtualClock(0) })
    await expect(d.track('k', Promise.reject(new Error('storage down')))).rejects.toThrow('storage down')
    expect(d.lookup('k').kind).toBe('new')
    expect(d.pending).toBe(0)
  })

  it('is bounded: the oldest deliveries are forgotten first', async () => {
    const d = new DedupeStore({ clock: new VirtualClock(0), maxEntries: 2 })
    await d.track('a', Promise.resolve(A))
    await d.track('b', Promise.resolve(B))
    await d.track('c', Promise.resolve(A))
    expect(d.size).toBe(2)
    expect(d.lookup('a').kind).toBe('new')
    expect(d.lookup('c').kind).toBe('stored')
  })
})

describe('receipts', () => {
  const body = new TextEncoder().encode('{"zen":"Practicality beats purity."}')
  const w = signWebhook({ provider: 'github', secret: 'k', body, nowMs: 1_000, deliveryId: 'd-1' })
  const v = verifyWebhook({ provider: 'github', body, headers: { ...w.headers, 'x-forwarded-for': '1.2.3.4' }, secrets: ['k'], nowMs: 1_000 })
  if (!v.ok) throw new Error('fixture does not verify')

  it('keep only the signature and delivery headers, and are deterministic (a retried store is idempotent)', () => {
    const a = encodeReceipt('github', v.deliveryId, v.signatureHeaders, body)
    const b = encodeReceipt('github', v.deliveryId, { ...v.signatureHeaders }, Uint8Array.from(body))
    expect(addressOf(a)).toBe(addressOf(b))
    const r = decodeReceipt(a)
    expect(Object.keys(v.signatureHeaders)).toEqual(['x-github-delivery', 'x-github-event', 'x-hub-signature-256']) // collected sorted
    expect(Object.keys(r.header.headers)).toEqual(['x-github-delivery', 'x-github-event', 'x-hub-signature-256'])
    expect(r.header).toMatchObject({ provider: 'github', deliveryId: 'd-1', bodyB3: addressOf(body), bodySize: body.byteLength })
    expect(Buffer.from(r.body).equals(Buffer.from(body))).toBe(true)
  })

  it('are byte for byte the documented layout (magic, JSON header line, raw body), non-ASCII and lone surrogates included', () => {
    // The layout spelled out with TextEncoder, independently of encodeReceipt's buffer handling.
    const reference = (deliveryId: string, headers: Record<string, string>, b: Uint8Array): Buffer => {
      const sorted = Object.fromEntries(Object.keys(headers).sort().map((k) => [k, headers[k]!]))
      const line = new TextEncoder().encode(`${JSON.stringify({ provider: 'github', deliveryId, headers: sorted, bodyB3: addressOf(b), bodySize: b.byteLength })}\n`)
      return Buffer.concat([Buffer.from('RON-RECEIPT/1\n'), line, b])
    }
    const big = new Uint8Array(10_000).fill(0xc3) // past node's pooled sizes
    for (const [id, headers, b] of [
      ['d-1', v.signatureHeaders, body],
      ['délivré-\u{1F680}', { 'x-hub-signature-256': 'sha256=ab', 'x-github-event': 'push' }, body],
      ['lone-\ud800-surrogate', {}, new Uint8Array(0)],
      ['big', v.signatureHeaders, big],
      ['unsorted', { 'x-z': '1', 'x-a': '2', '42': 'n', 'x-m': '3' }, body],
    ] as const) {
      const out = encodeReceipt('github', id, headers, b)
      expect(Buffer.from(out).equals(reference(id, headers, b))).toBe(true)
      expect(decodeReceipt(out).header.bodySize).toBe(b.byteLength)
    }
  })

  it('re-verify with the secret only; a tampered body or a foreign blob is refused', () => {
    const bytes = encodeReceipt('github', v.deliveryId, v.signatureHeaders, body)
    expect(verifyReceipt(bytes, ['k']).ok).toBe(true)
    expect(verifyReceipt(bytes, ['other'])).toMatchObject({ ok: false, reason: 'bad_signature' })
    const tampered = Uint8Array.from(bytes)
    tampered[tampered.length - 3]! ^= 1
    expect(() => verifyReceipt(tampered, ['k'])).toThrow(/does not match its recorded address/)
    expect(() => decodeReceipt(new TextEncoder().encode('hello'))).toThrow(/not a RON receipt/)
    expect(() => decodeReceipt(new TextEncoder().encode('RON-RECEIPT/1\n{"provider":"github"}\n'))).toThrow(/lacks a field/)
  })
})
