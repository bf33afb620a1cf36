/**
 * The trust model between nodes (README "Trust between nodes"): each node signs its replica
 * traffic with its own issuer through core's token provider; a peer's issuer key is accepted
 * for `storage:replicate` only.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, createTokenProvider, generateIssuerKey, localMinter, signToken, staticKeySource } from '@ron/core'
import type { TokenProvider } from '@ron/core'
import { createStorageClient, createStorageService } from '../src/index.js'
import type { StorageService } from '../src/index.js'
import { bytes } from './helpers.js'

const open: { close(): Promise<void> | void }[] = []
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close()
})

/** Two nodes, each with its own issuer; each trusts the other's key for replica traffic only. */
async function twoNodes(): Promise<{ a: StorageService; b: StorageService; transport: MemoryTransport; keyA: ReturnType<typeof generateIssuerKey>; keyB: ReturnType<typeof generateIssuerKey> }> {
  const transport = new MemoryTransport()
  const keyA = generateIssuerKey()
  const keyB = generateIssuerKey()
  const providers: TokenProvider[] = [
    createTokenProvider({ minter: localMinter(keyA, { iss: 'node-a', sub: 'node:a' }) }),
    createTokenProvider({ minter: localMinter(keyB, { iss: 'node-b', sub: 'node:b' }) }),
  ]
  const common = { rf: 2, writeQuorum: 2, chunkSize: 1024, repair: { auto: false }, drainReadWindowMs: 0 }
  const a = await createStorageService(
    { ...common, advertise: 'a', peers: ['b'], auth: { keys: staticKeySource([keyA]) }, peerKeys: { b: staticKeySource([keyB]) }, tokens: providers[0]! },
    transport,
  )
  const b = await createStorageService(
    { ...common, advertise: 'b', peers: ['a'], auth: { keys: staticKeySource([keyB]) }, peerKeys: { a: staticKeySource([keyA]) }, tokens: providers[1]! },
    transport,
  )
  transport.mount('a', a)
  transport.mount('b', b)
  open.push(transport, a, b, ...providers)
  return { a, b, transport, keyA, keyB }
}

describe('trust between nodes', () => {
  it("replicates with short-lived storage:replicate tokens from the node's own issuer, accepted through peerKeys", async () => {
    const { b, transport, keyA } = await twoNodes()
    const token = signToken(keyA, { iss: 'node-a', sub: 'client', aud: 'storage', scope: 'storage:write', ttlSec: 600 })
    const client = createStorageClient(transport, { target: 'a', token })
    const { address } = await client.put(bytes(5000, 1))
    // writeQuorum 2: acknowledged only once b held a copy, written through PUT /replica.
    expect(await b.store.stat(address)).toEqual({ size: 5000 })
  })

  it("a peer's key is accepted for storage:replicate only: not for client writes, deletes or admin routes", async () => {
    const { transport, keyA } = await twoNodes()
    const asA = (scope: string): string => signToken(keyA, { iss: 'node-a', sub: 'node:a', aud: 'storage', scope, ttlSec: 600 })
    const put = await transport.request('b', { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${asA('storage:write storage:replicate')}` }, body: 'not as a client' })
    expect(put.status).toBe(401)
    await put.dump()
    const admin = await transport.request('b', { method: 'GET', path: '/o', headers: { authorization: `Bearer ${asA('storage:admin storage:replicate')}` } })
    expect(admin.status).toBe(401)
    await admin.dump()
    // The replica route needs the scope, even from a trusted key.
    const noScope = await transport.request('b', { method: 'PUT', path: '/replica', headers: { authorization: `Bearer ${asA('storage:write')}` }, body: 'x' })
    expect(noScope.status).toBe(403)
    await noScope.dump()
    const replica = await transport.request('b', { method: 'PUT', path: '/replica', headers: { authorization: `Bearer ${asA('storage:replicate')}` }, body: 'a replica' })
    expect(replica.status).toBe(201)
    await replica.dump()
    // An unknown key is refused outright.
    const stranger = signToken(generateIssuerKey(), { sub: 'x', aud: 'storage', scope: 'storage:replicate', ttlSec: 600 })
    const refused = await transport.request('b', { method: 'PUT', path: '/replica', headers: { authorization: `Bearer ${stranger}` }, body: 'x' })
    expect(refused.status).toBe(401)
    await refused.dump()
  })
})
