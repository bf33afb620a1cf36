/** A provider serving the wrong bytes for an address must never look like a complete, clean read. */
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, addressOf, serve, type RonServer } from '@ron/core'
import { createInteropService, type InteropService } from '../src/index.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
})

/** A storage stand-in answering every GET with `bytes` (right length, wrong content). */
function lyingStorage(bytes: Uint8Array): { dispatch(): Promise<{ status: number; headers: Record<string, string>; body: AsyncIterable<Uint8Array> }> } {
  return {
    dispatch: () =>
      Promise.resolve({
        status: 200,
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) },
        body: (async function* () {
          // Two chunks: the mismatch is only known after the last one.
          yield bytes.subarray(0, 3)
          yield bytes.subarray(3)
        })(),
      }),
  }
}

async function start(storage: ReturnType<typeof lyingStorage>): Promise<{ server: RonServer; interop: InteropService }> {
  const transport = new MemoryTransport()
  transport.mount('storage', storage)
  const interop = await createInteropService({ index: { target: 'nowhere' }, retry: { tries: 1 } }, transport)
  const server = await serve(interop, { port: 0 })
  cleanups.push(async () => {
    await server.close()
    await interop.close()
    await transport.close()
  })
  return { server, interop }
}

describe('GET /o integrity over HTTP', () => {
  it('wrong bytes of the right length: the transfer is cut short, never a complete 200 body', async () => {
    const wanted = addressOf(new TextEncoder().encode('the real object'))
    const { server } = await start(lyingStorage(new TextEncoder().encode('a forged objec')))
    const res = await fetch(`${server.url}/o/${wanted}`)
    expect(res.status).toBe(200)
    await expect(res.arrayBuffer()).rejects.toThrow()
  })

  it('an empty answer for a non-empty address is refused before any header is sent', async () => {
    const wanted = addressOf(new TextEncoder().encode('not empty'))
    const { server } = await start(lyingStorage(new Uint8Array(0)))
    const res = await fetch(`${server.url}/o/${wanted}`)
    expect(res.status).toBeGreaterThanOrEqual(400)
    await res.arrayBuffer()
  })
})
