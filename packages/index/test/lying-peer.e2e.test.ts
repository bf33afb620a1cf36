/**
 * The lying-peer attack over real sockets: index A lists two peers, the name's real home B (a real
 * index) and a liar L (a bare HTTP server) that answers `victim.bank` with a self-consistent
 * manifest of its own making — first unsigned, then with a record it signed itself under B's id.
 * A believes only B's signed record.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, addressOf, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '../src/index.js'
import { directory, manifestFor, nameAnswer, signed, testNode } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(() => new Promise<void>((r) => server.close(() => r())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('a lying peer over real sockets', () => {
  it('its self-consistent answer for a name homed on another node is refused; the home answer is served', async () => {
    const issuer = createTestIssuer()
    const genuine = manifestFor('genuine bank')
    const genuineBytes = new TextEncoder().encode(JSON.stringify(genuine))
    const genuineAddress = addressOf(genuineBytes)
    const storageUrl = await listen((req, res) => {
      if (req.url === `/o/${genuineAddress}`) res.writeHead(200, { 'content-length': genuineBytes.byteLength }).end(genuineBytes)
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NotFound","message":"no","retryable":false,"corr_id":"x","details":{}}}')
    })

    const nodeA = testNode()
    const nodeB = testNode()
    const nodeL = testNode()
    const forged = manifestFor('phishing page')
    let liarAnswer: unknown = nameAnswer('victim.bank', forged)
    let liarHits = 0
    const liarUrl = await listen((req, res) => {
      liarHits++
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(liarAnswer))
    })

    const budgets = { deadlineMs: 30_000, storageTimeoutMs: 30_000 }
    const tb = new HttpTransport({ targets: { storage: storageUrl } })
    closers.push(() => tb.close())
    const b = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, identity: nodeB.identity, nodes: directory(nodeB, nodeA, nodeL), ...budgets }, tb)
    closers.push(() => b.close())
    const sb = await serve(b)
    closers.push(() => sb.close())

    const ta = new HttpTransport()
    closers.push(() => ta.close())
    // The liar is asked first, alone; the home only after the hedge delay.
    const a = await createIndexService({ amnesia: true, identity: nodeA.identity, nodes: directory(nodeA, nodeB, nodeL), peers: { targets: [liarUrl, sb.url], alpha: 1, beta: 1, hedgeMs: 0 }, ...budgets }, ta)
    closers.push(() => a.close())
    const sa = await serve(a)
    closers.push(() => sa.close())

    const client = new HttpTransport()
    closers.push(() => client.close())
    const reader = createIndexClient(client, { target: sa.url })

    // The name is not bound anywhere yet: the liar's unsigned answer makes nothing of it.
    await expect(reader.resolve('victim.bank', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    expect(liarHits).toBeGreaterThan(0)

    // B binds it (B is its home); the liar now signs its forgery itself, under B's id.
    await createIndexClient(client, { target: sb.url, token: issuer.mint({ scope: 'index:write', aud: 'index' }) }).setName('victim.bank', genuineAddress)
    const forgedAddress = addressOf(new TextEncoder().encode(JSON.stringify(forged)))
    liarAnswer = nameAnswer('victim.bank', forged, { record: { ...signed(nodeL, 'victim.bank', forgedAddress, 99), node: nodeB.identity.id } })
    const hitsBefore = liarHits
    const r = await reader.resolve('victim.bank', { fresh: true })
    expect(liarHits).toBeGreaterThan(hitsBefore)
    expect(r).toMatchObject({ manifestAddress: genuineAddress, manifest: genuine, source: 'peer', record: { node: nodeB.identity.id, seq: 1 } })
    const metrics = await (await fetch(`${sa.url}/metrics`)).text()
    expect(metrics).toMatch(/rejected_total\{[^}]*reason="name_unsigned"[^}]*\} 1/)
    expect(metrics).toMatch(/rejected_total\{[^}]*reason="name_bad_signature"[^}]*\} 1/)
  })
})
