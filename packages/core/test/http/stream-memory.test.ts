import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../src/http/handler.js'
import { serve, type RonServer } from '../../src/http/serve.js'

let server: RonServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('streamed replies on node:http', () => {
  it('regression: a long stream does not retain the chunks already written (256 MiB in bounded memory)', async () => {
    const chunks = 4096 // x 64 KiB = 256 MiB
    let peak = 0
    const base = process.memoryUsage().arrayBuffers
    async function* body(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < chunks; i++) {
        if (i % 128 === 0) peak = Math.max(peak, process.memoryUsage().arrayBuffers - base)
        yield new Uint8Array(65536).fill(i & 0xff)
      }
    }
    const handler = createHttpHandler({
      serviceId: 't',
      routes: [{ method: 'GET', path: '/big', handler: () => ({ status: 200, body: body() }) }],
    })
    server = await serve(handler, { port: 0 })
    const res = await request(`${server.url}/big`)
    let received = 0
    for await (const c of res.body) received += (c as Uint8Array).length
    expect(received).toBe(chunks * 65536)
    // Before the fix every chunk stayed reachable from a per-response promise until the end
    // (~256 MiB here); now only what is in flight in socket buffers is alive.
    expect(peak).toBeLessThan(96 * 2 ** 20)
  })
})
