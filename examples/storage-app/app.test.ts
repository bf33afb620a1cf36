import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport, addressOf, collectBytes } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageClient } from '@ron/storage'
import { afterEach, describe, expect, it } from 'vitest'
import { startStorageApp, type StorageApp } from './app.js'

let app: StorageApp | undefined
let transport: HttpTransport | undefined
let dir: string | undefined
afterEach(async () => {
  await transport?.close()
  await app?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  app = transport = dir = undefined
})

describe('examples/storage-app: storage embedded in a node:http app', () => {
  it('serves the app route and stores, reads back and range-reads objects through the typed client', async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-example-'))
    const issuer = createTestIssuer()
    app = await startStorageApp({ dataDir: dir, issuerJwks: issuer.jwks })
    transport = new HttpTransport({ targets: { storage: app.url } })

    const own = await transport.request('storage', { method: 'GET', path: '/' })
    expect(await own.text()).toBe('my app\n')

    const data = new TextEncoder().encode('hello from an embedding app')
    const writer = createStorageClient(transport, { target: 'storage', token: issuer.mint({ scope: 'storage:write' }) })
    const put = await writer.put(data)
    expect(put).toEqual({ address: addressOf(data), size: data.byteLength, created: true })

    const reader = createStorageClient(transport, { target: 'storage' })
    expect(new TextDecoder().decode(await reader.getBytes(put.address))).toBe('hello from an embedding app')
    const part = await reader.get(put.address, { range: { start: 0, end: 4 } })
    expect(part.status).toBe(206)
    expect(new TextDecoder().decode(await collectBytes(part.body))).toBe('hello')

    // Writes without a token are refused with the typed error.
    await expect(reader.put(data)).rejects.toMatchObject({ code: 'Unauthorized' })
  })
})
