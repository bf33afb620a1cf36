import { afterEach, describe, expect, it } from 'vitest'
import { createIndexClient } from '@ron/index'
import { createInteropClient } from '@ron/interop'
import { createPassportClient } from '@ron/passport'
import { createStorageClient } from '@ron/storage'
import { startMesh } from './mesh.js'

let mesh: Awaited<ReturnType<typeof startMesh>> | undefined
afterEach(async () => {
  await mesh?.close()
  mesh = undefined
})

describe('the whole mesh on one MemoryTransport', () => {
  it('stores, names, resolves, receives a webhook, and refuses a revoked token everywhere', async () => {
    mesh = await startMesh({ githubSecret: 'gh-secret' })
    const { transport, adminToken } = mesh
    const storage = createStorageClient(transport, { target: 'storage', token: adminToken })
    const content = await storage.put('<h1>hello</h1>')
    const manifest = await storage.put(JSON.stringify({ content: content.address, size: content.size, type: 'text/html' }))
    const index = createIndexClient(transport, { token: adminToken })
    await index.setName('hello.docs', manifest.address)
    const resolved = (await index.resolve('hello.docs')) as unknown as { manifestAddress: string; manifest: { content: string } }
    expect(resolved).toMatchObject({ manifestAddress: manifest.address, manifest: { content: content.address } })

    const ack = await createInteropClient(transport).sendTestWebhook('github', 'gh-secret')
    expect(ack.receipt).toMatch(/^b3:/)

    const passport = createPassportClient(transport, { token: adminToken })
    const { token } = await passport.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    await createStorageClient(transport, { target: 'storage', token }).put('allowed')
    await passport.revoke({ token })
    await expect(createStorageClient(transport, { target: 'storage', token }).put('refused')).rejects.toMatchObject({ code: 'Unauthorized' })
  })
})
