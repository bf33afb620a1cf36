/**
 * Two passports sharing a cluster store (SPEC §6c; ron-node keeps it in etcd, see
 * packages/cli/src/coordination/etcd-passport.ts): each signs with its own key, publishes its key
 * set, and every node verifies every node's tokens, refuses a token revoked on any node (its
 * subtree minted on another node included), and serves every enrolment. The store here is an
 * in-memory implementation of the interface with synchronous watches, as the boundary passport
 * owns only the interface of.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ALL_SCOPES, MemoryTransport, generateIssuerKey } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createPassportClient, createPassportService, type ClusterLink, type ClusterRevocation, type EnrolledNode, type PassportClusterListener, type PassportClusterState, type PassportClusterStore, type PassportService } from '../src/index.js'
import { ADMIN_POLICY, T0 } from './helpers.js'

/** One cluster's shared state; `store(nodeId)` is a node's view of it. */
function memoryCluster() {
  const revocations = new Map<string, ClusterRevocation>()
  const links: ClusterLink[] = []
  const nodes: EnrolledNode[] = []
  const keySets = new Map<string, unknown[]>()
  const watchers = new Map<string, PassportClusterListener>()
  const others = (self: string): PassportClusterListener[] => [...watchers].filter(([n]) => n !== self).map(([, l]) => l)
  function store(nodeId: string): PassportClusterStore {
    return {
      nodeId,
      load: (): Promise<PassportClusterState> => Promise.resolve({ revocations: [...revocations.values()], links: [...links], nodes: [...nodes], keySets: [...keySets].map(([node, keys]) => ({ node, keys })) }),
      revoke(items, cascade) {
        const stored: ClusterRevocation[] = []
        for (const i of items) revocations.set(i.jti, i)
        const more: ClusterRevocation[] = []
        if (cascade) {
          let frontier = items.map((i) => i.jti)
          while (frontier.length > 0) {
            const next: string[] = []
            for (const l of links) {
              if (!frontier.includes(l.prf) || revocations.has(l.jti)) continue
              const r = { jti: l.jti, exp: l.exp, revokedAt: items[0]!.revokedAt, cascade: true }
              revocations.set(l.jti, r)
              more.push(r)
              next.push(l.jti)
            }
            frontier = next
          }
        }
        stored.push(...items, ...more)
        for (const w of others(nodeId)) w.revoked(stored)
        return Promise.resolve(more)
      },
      link(l) {
        if (revocations.has(l.prf)) return Promise.resolve(false)
        links.push(l)
        for (const w of others(nodeId)) w.linked([l])
        return Promise.resolve(true)
      },
      enrol(n) {
        nodes.push(n)
        for (const w of others(nodeId)) w.enrolled(n)
        return Promise.resolve()
      },
      publishKeys(keys) {
        keySets.set(nodeId, [...keys])
        for (const w of others(nodeId)) w.keys(nodeId, keys)
        return Promise.resolve()
      },
      watch(listener) {
        watchers.set(nodeId, listener)
        return () => watchers.delete(nodeId)
      },
    }
  }
  return { store, revocations }
}

const services: PassportService[] = []
afterEach(async () => {
  for (const s of services.splice(0)) await s.close()
})

async function node(cluster: ReturnType<typeof memoryCluster>, id: string, clock: VirtualClock, transport: MemoryTransport, target: string): Promise<PassportService> {
  const p = await createPassportService({ policy: ADMIN_POLICY, drainReadWindowMs: 0 }, transport, { clock, cluster: cluster.store(id) })
  services.push(p)
  transport.mount(target, p)
  return p
}

describe('a cluster of passports on a shared store', () => {
  it('verifies the other node’s tokens, refuses what any node revoked (the cross-node subtree too) and serves every enrolment', async () => {
    const clock = new VirtualClock(T0)
    const transport = new MemoryTransport({ clock })
    const cluster = memoryCluster()
    const a = await node(cluster, 'node-a', clock, transport, 'passport')
    const b = await node(cluster, 'node-b', clock, transport, 'passport-b')
    const adminA = await a.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 86400 })
    const clientA = createPassportClient(transport, { token: adminA.token })
    const onB = createPassportClient(transport, { token: adminA.token, target: 'passport-b' })
    // Minted on A, verified on B with A's published key set.
    const t = await clientA.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    await expect(b.verifier.verify(t.token, { audience: 'storage' })).resolves.toMatchObject({ jti: t.jti })
    // A child attenuated on B from A's token, then the parent revoked on A: B refuses both.
    const child = await onB.attenuate({ token: t.token, ttlSec: 60 })
    await expect(a.verifier.verify(child.token, { audience: 'storage' })).resolves.toMatchObject({ prf: t.jti })
    await clientA.revoke({ jti: t.jti })
    await expect(b.verifier.verify(t.token, { audience: 'storage' })).rejects.toMatchObject({ details: { reason: 'revoked' } })
    await expect(a.verifier.verify(child.token, { audience: 'storage' })).rejects.toMatchObject({ details: { reason: 'revoked' } })
    expect(cluster.revocations.has(t.jti)).toBe(true)
    // Enrolled on A, served by B.
    const key = generateIssuerKey()
    await clientA.enrolNode({ nodeId: 'n0123456789abcdef', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x }, scopes: ['storage:read'] })
    const res = await transport.request('passport-b', { method: 'GET', path: '/v1/passport/node-keys' })
    expect(JSON.stringify(await res.json())).toContain('n0123456789abcdef')
    // A restarted B loads everything from the store.
    await b.close()
    services.splice(services.indexOf(b), 1)
    const b2 = await node(cluster, 'node-b', clock, transport, 'passport-b2')
    await expect(b2.verifier.verify(t.token, { audience: 'storage' })).rejects.toMatchObject({ details: { reason: 'revoked' } })
    const t2 = await clientA.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:read'], ttlSec: 600 })
    await expect(b2.verifier.verify(t2.token, { audience: 'storage' })).resolves.toMatchObject({ jti: t2.jti })
  })
})
