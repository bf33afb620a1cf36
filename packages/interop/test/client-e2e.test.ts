/** Interop and storage on real sockets (core's serve on port 0), reached through HttpTransport. */
import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, collectBytes, serve, type RonServer } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '@ron/storage'
import { createInteropClient, createInteropService, fetchAndVerifyReceipt, hashApiKey, toServiceTokens } from '../src/index.js'
import { passportDouble } from './helpers.js'

/**
 * Real sockets run on the wall clock: CI runs the whole suite in parallel on 2 cores, where the
 * default 2 s receipt deadline (and 1.2–2 s upstream deadlines) can pass while the test is merely
 * descheduled, turning a correct 202 into a 504. Deadlines are not what this test checks (the
 * virtual-clock tests do), so they get room.
 */
const SLACK_MS = 20_000 // under the 30 s test timeout, so a real hang still fails with a typed error

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
})

describe('interop over real sockets', () => {
  it('ron-node style hosting: webhook test, upload and read through HTTP', async () => {
    const issuer = createTestIssuer()
    const storage = await createStorageService({ auth: { keys: issuer.keys } })
    const storageServer = await serve(storage, { port: 0, host: '127.0.0.1' })
    const passportServer = await serve(passportDouble(issuer), { port: 0, host: '127.0.0.1' })
    const base = (s: RonServer): string => s.url
    const transport = new HttpTransport({ targets: { storage: base(storageServer), passport: base(passportServer) } })
    const token = issuer.mint({ sub: 'node:test', scope: ['storage:write'], aud: ['storage'], ron: { maxBytes: 1 << 30 } })
    const interop = await createInteropService(
      {
        webhooks: { providers: { github: { secrets: ['s3cret'] } }, ackDeadlineMs: SLACK_MS },
        apiKeys: [{ client: 'bob', keyHash: hashApiKey('bob-key') }],
        storage: { timeoutMs: SLACK_MS },
        passport: { timeoutMs: SLACK_MS },
        index: { timeoutMs: SLACK_MS },
        uploads: { timeoutMs: SLACK_MS },
      },
      transport,
      { tokens: toServiceTokens(token) },
    )
    const interopServer = await serve(interop, { port: 0, host: '127.0.0.1' })
    cleanups.push(async () => {
      await interopServer.close()
      await interop.close()
      await passportServer.close()
      await storageServer.close()
      await storage.close()
      await transport.close()
    })
    const outside = new HttpTransport({ targets: { interop: base(interopServer) } })
    cleanups.push(() => outside.close())
    const client = createInteropClient(outside, { apiKey: 'bob-key', timeoutMs: SLACK_MS })
    const ack = await client.sendTestWebhook('github', 's3cret')
    expect(ack).toMatchObject({ status: 202, accepted: true })
    expect((await fetchAndVerifyReceipt(transport, 'storage', ack.receipt, () => ['s3cret'])).ok).toBe(true)
    await expect(client.sendTestWebhook('github', 'wrong')).rejects.toMatchObject({ code: 'Unauthorized', details: { reason: 'bad_signature' } })
    const { address } = await client.put('over http')
    expect(new TextDecoder().decode(await collectBytes((await client.get(address)).body))).toBe('over http')
  })
})
