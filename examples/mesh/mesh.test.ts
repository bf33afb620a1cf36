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

describe('the mesh node’s identity', () => {
  it('has a node id of the one form, announces under it, and its service tokens carry service-call scopes only', async () => {
    mesh = await startMesh({ githubSecret: 'gh-secret' })
    const { transport, adminToken, nodeId } = mesh
    expect(nodeId).toMatch(/^n[0-9a-f]{16}$/)
    const storage = createStorageClient(transport, { target: 'storage', token: adminToken })
    const { address } = await storage.put('announced')
    // Storage announced the object under the node id, with its endpoint (a target name here).
    const index = createIndexClient(transport, { token: adminToken })
    // The announcement is asynchronous (a bounded queue): a bounded poll until index has it.
    let providers: { node: string; endpoint: string }[] = []
    for (let i = 0; i < 200 && providers.length === 0; i++) {
      providers = ((await index.providers(address).catch(() => ({ providers: [] }))) as unknown as { providers: { node: string; endpoint: string }[] }).providers
      if (providers.length === 0) await new Promise((r) => setTimeout(r, 10))
    }
    expect(providers).toContainEqual(expect.objectContaining({ node: nodeId, endpoint: 'storage' }))
    // The node's own service tokens carry at most the service-call scopes: none for passport or node.
    const { tokens } = mesh
    for (const [aud, scope] of [
      ['passport', 'passport:issue'],
      ['passport', 'passport:admin'],
      ['node', 'node:admin'],
    ] as const) {
      await expect(Promise.resolve().then(() => tokens.token({ aud, scope: [scope] })), scope).rejects.toMatchObject({ code: 'Forbidden' })
    }
    // Nor can the admin issue a token in the node's name (service identities come from enrolment).
    const passport = createPassportClient(transport, { token: adminToken })
    await expect(passport.issue({ sub: `node:${nodeId}`, aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })).rejects.toMatchObject({ code: 'Forbidden' })
  })
})
