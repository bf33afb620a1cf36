import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, addressOf, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '../src/index.js'
import { directory, manifestFor, testNode } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** A minimal storage read path over a real socket (GET /o/:addr). */
async function storageServer(objects: Map<string, Uint8Array>): Promise<string> {
  const server: Server = createServer((req, res) => {
    const bytes = objects.get((req.url ?? '').replace(/^\/o\//, ''))
    if (bytes === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'NotFound', message: 'no', retryable: false, corr_id: 'x', details: {} } }))
      return
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength }).end(bytes)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(() => new Promise<void>((r) => server.close(() => r())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('index over real sockets', () => {
  it('a name bound at one index resolves at another through a peer query over HTTP', async () => {
    const issuer = createTestIssuer()
    const objects = new Map<string, Uint8Array>()
    const storageUrl = await storageServer(objects)
    const m = manifestFor('e2e')
    const bytes = new TextEncoder().encode(JSON.stringify(m))
    const ma = addressOf(bytes)
    objects.set(ma, bytes)

    // Node b is the name's home and runs the storage; a knows b's key (and b a's).
    const nodeA = testNode()
    const nodeB = testNode({ storage: storageUrl })
    const tb = new HttpTransport({ targets: { storage: storageUrl } })
    closers.push(() => tb.close())
    // Real sockets and real time: budgets far above what a loaded CI machine can take, so only
    // behaviour decides the outcome (the budgets themselves are tested on virtual time).
    const budgets = { deadlineMs: 30_000, storageTimeoutMs: 30_000 }
    const b = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, identity: nodeB.identity, nodes: directory(nodeB, nodeA), ...budgets }, tb)
    closers.push(() => b.close())
    const sb = await serve(b)
    closers.push(() => sb.close())

    const ta = new HttpTransport({ targets: { storage: storageUrl } })
    closers.push(() => ta.close())
    const a = await createIndexService({ amnesia: true, peers: { targets: [sb.url] }, cache: { ttlMs: 600_000 }, identity: nodeA.identity, nodes: directory(nodeA, nodeB), ...budgets }, ta)
    closers.push(() => a.close())
    const sa = await serve(a)
    closers.push(() => sa.close())

    const client = new HttpTransport()
    closers.push(() => client.close())
    const writer = createIndexClient(client, { target: sb.url, token: () => issuer.mint({ scope: ['index:write'], aud: 'index' }) })
    await writer.setName('docs.e2e', ma)
    const storageB = createIndexClient(client, { target: sb.url, token: () => issuer.mint({ sub: `node:${nodeB.identity.id}`, scope: ['index:announce'], aud: 'index' }) })
    await storageB.announce({ address: m.content, node: nodeB.identity.id, endpoint: storageUrl, ttlSec: 60 })

    const r = await createIndexClient(client, { target: sa.url }).resolve('docs.e2e')
    expect(r).toMatchObject({ key: 'docs.e2e', manifestAddress: ma, manifest: m, source: 'peer', record: { node: nodeB.identity.id, seq: 1 } })
    expect(r.providers.map((p) => p.node)).toEqual([nodeB.identity.id])

    // Plain fetch, as curl would.
    const res = await fetch(`${sa.url}/resolve/docs.e2e`, { headers: { 'x-corr-id': 'corr-e2e-1' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-corr-id')).toBe('corr-e2e-1')
    expect(res.headers.get('cache-control')).toMatch(/^max-age=\d+$/)
    expect(((await res.json()) as { source: string }).source).toBe('cache')
    const missing = await fetch(`${sa.url}/resolve/b3:${'0'.repeat(64)}`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('NotFound')
  })
})
