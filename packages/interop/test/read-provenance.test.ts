/**
 * Reads fetch only from endpoints of known nodes (SPEC §6a), and what they send back is typed by
 * interop, never by the provider. The blind-SSRF attack, over real sockets: an `index:announce`
 * holder announces an internal URL as a provider endpoint; interop's anonymous `GET /o/:addr` must
 * never contact it. A listener on that internal port records every hit.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, addressOf, generateIssuerKey, newNodeId, nodeIdentityFromKey, serve, staticNodeDirectory, type KnownNode } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '@ron/index'
import { createInteropService } from '../src/index.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function listen(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(() => new Promise<void>((r) => server.close(() => r())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The internal service an attacker aims at: records every request it gets. */
async function internalListener(): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = []
  const url = await listen((req, res) => {
    hits.push(req.url ?? '')
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>internal admin</h1>')
  })
  return { url, hits }
}

/** A storage read path holding `objects`, answering with a hostile content type. */
async function storageServer(objects: Map<string, Uint8Array>, hits: string[] = []): Promise<string> {
  return listen((req, res) => {
    hits.push(req.url ?? '')
    const bytes = objects.get((req.url ?? '').replace(/^\/o\//, ''))
    if (bytes === undefined) res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NotFound","message":"no","retryable":false,"corr_id":"x","details":{}}}')
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': bytes.byteLength }).end(bytes)
  })
}

/** An index stand-in answering every resolve with `providers`. */
async function indexServer(providers: Array<{ node: string; endpoint: string }>): Promise<string> {
  return listen((req, res) => {
    const key = (req.url ?? '').replace(/^\/resolve\//, '')
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ key, providers: providers.map((p) => ({ ...p, score: 1 })), source: 'local', ttlSec: 10 }))
  })
}

async function interopOn(targets: Record<string, string>, nodes?: ReturnType<typeof staticNodeDirectory>): Promise<string> {
  const transport = new HttpTransport({ targets })
  closers.push(() => transport.close())
  const interop = await createInteropService({ retry: { tries: 1 } }, transport, nodes === undefined ? {} : { nodes })
  closers.push(() => interop.close())
  const server = await serve(interop)
  closers.push(() => server.close())
  return server.url
}

function node(services: Record<string, string>): KnownNode {
  const id = nodeIdentityFromKey(newNodeId(), generateIssuerKey())
  return { id: id.id, nodeKey: id.publicKey, services }
}

const body = new TextEncoder().encode('<script>alert(document.domain)</script>')
const address = addressOf(body)

describe('GET /o/:addr follows only endpoints of known nodes', () => {
  it('the SSRF chain over real sockets: index refuses the announcement, and interop never contacts the internal URL', async () => {
    const internal = await internalListener()
    // This node's storage does not hold the object: the read goes looking for a provider.
    const storageUrl = await storageServer(new Map())
    const issuer = createTestIssuer()
    // Embedded mode, as a node without a directory: index only checks that a node announces for itself.
    const index = await createIndexService({ amnesia: true, auth: { keys: issuer.keys } })
    closers.push(() => index.close())
    const indexSrv = await serve(index)
    closers.push(() => indexSrv.close())
    const client = new HttpTransport()
    closers.push(() => client.close())
    const attacker = createIndexClient(client, { target: indexSrv.url, token: issuer.mint({ sub: 'node:n-attacker', scope: 'index:announce', aud: 'index' }) })
    const secret = `${internal.url}/secret`
    // For a victim's node id: refused.
    await expect(attacker.announce({ address, node: 'n-victim', endpoint: secret, ttlSec: 600 })).rejects.toMatchObject({ code: 'Forbidden', details: { reason: 'not_own_node' } })
    // For its own id, with no directory to check the URL against, index records it ...
    await attacker.announce({ address, node: 'n-attacker', endpoint: secret, ttlSec: 600 })
    // ... and interop, which knows no node at that URL, never follows it.
    const interopUrl = await interopOn({ index: indexSrv.url, storage: storageUrl })
    const res = await fetch(`${interopUrl}/o/${address}`)
    expect(res.status).toBe(404)
    await res.arrayBuffer()
    expect(internal.hits).toEqual([])
  })

  it('with a node directory: an unknown URL, a known node URL that is not its storage and a target name are never fetched', async () => {
    const internal = await internalListener()
    const adminHits: string[] = []
    const knownAdmin = await listen((req, res) => {
      adminHits.push(req.url ?? '')
      res.writeHead(404).end()
    })
    const storageUrl = await storageServer(new Map())
    const peer = node({ storage: 'http://127.0.0.1:1', passport: knownAdmin })
    const me = node({ storage: storageUrl })
    const indexUrl = await indexServer([
      { node: peer.id, endpoint: `${internal.url}/secret` },
      { node: peer.id, endpoint: knownAdmin },
      { node: peer.id, endpoint: 'passport' },
      { node: peer.id, endpoint: 'javascript:alert(1)' },
    ])
    const interopUrl = await interopOn({ index: indexUrl, storage: storageUrl, passport: knownAdmin }, staticNodeDirectory([me, peer]))
    const res = await fetch(`${interopUrl}/o/${address}`)
    expect(res.status).toBe(404)
    await res.arrayBuffer()
    expect(internal.hits).toEqual([])
    expect(adminHits).toEqual([])
  })

  it("a known node's storage is followed; the answer is application/octet-stream with nosniff, never the provider's type", async () => {
    const peerHits: string[] = []
    const peerStorage = await storageServer(new Map([[address, body]]), peerHits)
    const localHits: string[] = []
    const localStorage = await storageServer(new Map(), localHits)
    const peer = node({ storage: peerStorage })
    const me = node({ storage: localStorage })
    const indexUrl = await indexServer([{ node: peer.id, endpoint: `${peerStorage}/` }])
    const interopUrl = await interopOn({ index: indexUrl, storage: localStorage }, staticNodeDirectory([me, peer]))
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${interopUrl}/o/${address}`, { method })
      expect(res.status, method).toBe(200)
      expect(res.headers.get('content-type'), method).toBe('application/octet-stream')
      expect(res.headers.get('x-content-type-options'), method).toBe('nosniff')
      if (method === 'GET') expect(new Uint8Array(await res.arrayBuffer())).toEqual(body)
      else await res.arrayBuffer()
    }
    // This node's storage was asked first; the peer's verified copy was kept, so HEAD asked nobody.
    expect(localHits).toEqual([`/o/${address}`])
    expect(peerHits).toEqual([`/o/${address}`])
  })

  it('without a directory, a provider named by a transport target is followed; a URL is not', async () => {
    const internal = await internalListener()
    const storageUrl = await storageServer(new Map())
    const indexUrl = await indexServer([{ node: 'n1', endpoint: `${internal.url}/x` }, { node: 'n2', endpoint: 'storage-b' }])
    const bHits: string[] = []
    const storageB = await storageServer(new Map([[address, body]]), bHits)
    const interopUrl = await interopOn({ index: indexUrl, storage: storageUrl, 'storage-b': storageB })
    const res = await fetch(`${interopUrl}/o/${address}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/octet-stream')
    await res.arrayBuffer()
    expect(internal.hits).toEqual([])
    expect(bHits).toEqual([`/o/${address}`])
  })
})
