/** `signWebhook`'s defaults (fresh delivery ids, now, byte bodies) and `toServiceTokens`' sources. */
import { describe, expect, it } from 'vitest'
import { signWebhook, samplePayload, toServiceTokens, verifyWebhook, WEBHOOK_PROVIDERS } from '../src/index.js'
import { SECRETS } from './helpers.js'

describe('signWebhook defaults', () => {
  it('signs a byte body at the current time with a fresh delivery id, and each verifies', () => {
    for (const provider of WEBHOOK_PROVIDERS) {
      const body = new TextEncoder().encode(samplePayload(provider))
      const a = signWebhook({ provider, secret: SECRETS[provider], body })
      const b = signWebhook({ provider, secret: SECRETS[provider], body })
      expect(a.body).toBe(body)
      const v = verifyWebhook({ provider, body: a.body, headers: a.headers, secrets: [SECRETS[provider]], nowMs: Date.now() })
      expect(v.ok, provider).toBe(true)
      if (provider === 'github') expect(a.headers['x-github-delivery']).not.toBe(b.headers['x-github-delivery'])
      if (provider === 'standard') expect(a.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/)
    }
  })

  it('refuses a Standard Webhooks secret that is not base64', () => {
    expect(() => signWebhook({ provider: 'standard', secret: 'not base64!', body: '{}' })).toThrow(RangeError)
  })
})

describe('toServiceTokens', () => {
  it('turns a static token, a function and a synchronous provider into one async provider; undefined stays undefined', async () => {
    const req = { aud: 'storage', scope: ['storage:write'] }
    expect(await toServiceTokens('static').token(req)).toBe('static')
    expect(await toServiceTokens((r) => `fn:${r.aud}`).token(req)).toBe('fn:storage')
    expect(await toServiceTokens({ token: (r) => `sync:${r.scope.join(',')}` }).token(req)).toBe('sync:storage:write')
    expect(toServiceTokens(undefined)).toBeUndefined()
  })
})
