 
import { describe, expect, it } from 'vitest'
import { HttpTransport, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageClient, createStorageService } from '../src/index.js'
import { addressOfBytes, bytes, readAll, tempDir } from './helpers.js'

describe('storage end to end over real sockets', () => {
  it('puts, gets, ranges and conditionally gets through HttpTransport and the client', async () => {
    const { dir, cleanup } = await tempDir()
    const issuer = createTestIssuer()
    const svc = await createStorageService({ dataDir: dir, auth: { keys: issuer.keys } })
    const server = await serve(svc, { port: 0 })
    const transport = new HttpTransport({ targets: { storage: server.url } })
    try {
      const client = createStorageClient(transport, { target: 'storage', token: issuer.mint({ scope: 'storage:write', aud: 'storage' }) })
      const data = bytes(300 * 1024 + 7, 21)
      async function* chunks(): AsyncGenerator<Uint8Array> {
        for (let off = 0; off < data.byteLength; off += 50_000) yield data.subarray(off, off + 50_000)
      }
      const put = await client.put(chunks(), { expect: addressOfBytes(data) })
      expect(put).toEqual({ address: addressOfBytes(data), size: data.byteLength, created: true })
      expect(await client.put(data)).toMatchObject({ created: false })

      const whole = await client.getBytes(put.address)
      expect(Buffer.from(whole).equals(Buffer.from(data))).toBe(true)

      const range = await client.get(put.address, { range: { start: 65_530, end: 65_545 } })
      expect(range.status).toBe(206)
      expect(range.headers['content-range']).toBe(`bytes 65530-65545/${data.byteLength}`)
      expect(await readAll(range.body)).toEqual(data.subarray(65_530, 65_546))

      const notModified = await transport.request('storage', { method: 'GET', path: `/o/${put.address}`, headers: { 'if-none-match': `"${put.address}"` } })
      expect(notModified.status).toBe(304)
      await notModified.dump()

      const unsatisfiable = await transport.request('storage', { method: 'GET', path: `/o/${put.address}`, headers: { range: `bytes=${data.byteLength}-` } })
      expect(unsatisfiable.status).toBe(416)
      expect(unsatisfiable.headers['content-range']).toBe(`bytes */${data.byteLength}`)
      await unsatisfiable.dump()

      expect(await client.head(put.address)).toEqual({ size: data.byteLength })
      await expect(client.get('b3:nope')).rejects.toMatchObject({ code: 'Malformed' })
    } finally {
      await transport.close()
      await server.close()
      await svc.close()
      await cleanup()
    }
  })
})
