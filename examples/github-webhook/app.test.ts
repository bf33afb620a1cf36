import { HttpTransport } from '@ron/core'
import { fetchAndVerifyReceipt, samplePayload, signWebhook } from '@ron/interop'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { startWebhookApp, type WebhookApp } from './app.js'

const SECRET = 'It\'s a Secret to Everybody'

let app: WebhookApp | undefined
let transport: HttpTransport | undefined
afterEach(async () => {
  await transport?.close()
  await app?.close()
  app = transport = undefined
})

describe('examples/github-webhook: a GitHub webhook receiver in a node:http app', () => {
  it('answers a correctly signed delivery 202 with a receipt that re-verifies, and refuses a forged one', async () => {
    app = await startWebhookApp({ githubSecrets: [SECRET] })

    // A delivery exactly as GitHub sends it, over a real socket.
    const delivery = signWebhook({ provider: 'github', secret: SECRET, body: samplePayload('github') })
    const res = await request(`${app.url}${delivery.path}`, { method: 'POST', headers: delivery.headers, body: delivery.body })
    expect(res.statusCode).toBe(202)
    const ack = (await res.body.json()) as { receipt: string }
    expect(ack.receipt).toMatch(/^b3:/)

    // Anyone can fetch the receipt from the app and re-verify it with the secret.
    transport = new HttpTransport({ targets: { app: app.url } })
    const verified = await fetchAndVerifyReceipt(transport, 'app', ack.receipt, () => [SECRET])
    expect(verified.ok).toBe(true)
    expect(verified.receipt).toMatchObject({ provider: 'github', deliveryId: delivery.headers['x-github-delivery'] })
    // ...and it does not verify under another secret.
    expect((await fetchAndVerifyReceipt(transport, 'app', ack.receipt, () => ['another secret'])).ok).toBe(false)

    // A forged delivery (signed with the wrong secret) is refused and nothing is stored.
    const forged = signWebhook({ provider: 'github', secret: 'guess', body: samplePayload('github') })
    const refused = await request(`${app.url}${forged.path}`, { method: 'POST', headers: forged.headers, body: forged.body })
    expect(refused.statusCode).toBe(401)
    expect(await refused.body.json()).toMatchObject({ error: { code: 'Unauthorized', details: { reason: 'bad_signature' } } })
  })
})
