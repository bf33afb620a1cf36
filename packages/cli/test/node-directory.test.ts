/**
 * What the node's composition hands its services (issue 20 item 2): its `NodeIdentity` and a live
 * `NodeDirectory` of itself and its pinned, accepted peers.
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateIssuerKey, newNodeId, verifyNodeSignature } from '@ron/core'
import { startNode } from '../src/node.js'
import { startFakePeer, type FakePeer } from './fake-peer.js'

let dir: string
const fakes: FakePeer[] = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-nodes-'))
})
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()))
  await rm(dir, { recursive: true, force: true })
})

describe('the node identity and directory', () => {
  it('lists this node first, then pinned peers with their keys, service URLs and admin URL; never a refused peer', async () => {
    const peerId = newNodeId()
    const peerKey = generateIssuerKey({ epoch: 1 }).publicJwk.x
    const good = await startFakePeer((url) => ({ nodeId: peerId, nodeKey: peerKey, services: { storage: { url }, index: { url: `${url}/index` } } }))
    const spoof = await startFakePeer((url) => ({ nodeId: 'index', nodeKey: generateIssuerKey({ epoch: 1 }).publicJwk.x, services: { index: { url } } }))
    fakes.push(good, spoof)
    const node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500, services: ['storage', 'passport', 'index'], peers: [good.url, spoof.url] })
    try {
      // The identity: the node's id and key, and a signer whose signatures verify under /status's nodeKey.
      expect(node.identity.id).toBe(node.nodeId)
      const status = (await (await fetch(`${node.admin}/status`)).json()) as { nodeKey: string }
      expect(node.identity.publicKey).toBe(status.nodeKey)
      const data = new TextEncoder().encode('ron:name:v1\n{}')
      expect(verifyNodeSignature(status.nodeKey, data, node.identity.sign(data))).toBe(true)

      const nodes = node.nodes
      expect(nodes.selfId).toBe(node.nodeId)
      const [self, ...peers] = nodes.list()
      expect(self).toEqual({ id: node.nodeId, nodeKey: status.nodeKey, admin: node.admin, services: node.services })
      expect(peers).toEqual([{ id: peerId, nodeKey: peerKey, admin: good.url, services: { storage: good.url, index: `${good.url}/index` } }])
      expect(nodes.byEndpoint(`${good.url}/`)).toMatchObject({ id: peerId })
      expect(nodes.byEndpoint(node.services['storage']!)).toMatchObject({ id: node.nodeId })
      expect(nodes.byEndpoint(spoof.url)).toBeUndefined()
      expect(nodes.get('index')).toBeUndefined()

      // Live: forgetting the good peer's pin takes it out until it is pinned again.
      expect(await node.forgetPeer(good.url)).toBe(true)
      expect(nodes.get(peerId)).toBeUndefined()
    } finally {
      await node.close()
    }
  })
})
