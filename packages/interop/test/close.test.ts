import { describe, expect, it } from 'vitest'
import { signWebhook } from '../src/index.js'
import { API_KEY, SECRETS, T0, closeOnVirtualTime, system } from './helpers.js'

describe('close()', () => {
  it('leaves no timer behind (sentinel, deadlines, backoffs), a second close() joins the first, and later requests get Closed/Draining, not a hang', async () => {
    const sys = await system()
    // Traffic that arms every kind of timer: a webhook (ack deadline), an upload, a read.
    const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{"bye":1}', nowMs: T0 })
    expect((await sys.request(w.method, w.path, w.headers, w.body)).status).toBe(202)
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')).status).toBe(201)
    const first = sys.interop.close()
    const second = sys.interop.close()
    await closeOnVirtualTime(sys.clock, Promise.all([first, second]).then(() => undefined))
    await sys.interop.close()
    // Storage's own timers are its business: close it too, then nothing may be pending.
    await closeOnVirtualTime(sys.clock, sys.storage.close())
    expect(sys.clock.pending).toBe(0)
    const after = await sys.request(w.method, w.path, w.headers, w.body)
    expect(after.status).toBe(503)
    await sys.transport.close()
  })
})
