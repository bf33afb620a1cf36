/**
 * Announcements belong to their node (SPEC §6a): an `index:announce` holder announces only for
 * the node its token names (`sub: node:<id>`), only for an endpoint that node advertises (with a
 * node directory) or an http(s) URL or transport target name (without one), and never replaces
 * another node's record.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService } from '../src/index.js'
import { addr, directory, setup, testNode, type Env } from './helpers.js'

let env: Env | undefined
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await env?.close()
  env = undefined
  for (const c of closers.splice(0).reverse()) await c()
})

async function refusedCount(e: Env, reason: string): Promise<number> {
  const line = (await e.index.metricsText()).split('\n').find((l) => l.startsWith('index_announcements_refused_total') && l.includes(`reason="${reason}"`))
  return Number(line?.split(' ').pop())
}

describe('announcements belong to their node', () => {
  it("a node cannot announce for another node's id, nor replace that node's record", async () => {
    env = await setup()
    const a = addr('victim-content')
    await env.announcer('n-victim').announce({ address: a, node: 'n-victim', endpoint: 'http://victim:7701', ttlSec: 600 })
    // The attacker holds index:announce, but for its own node only.
    const attacker = env.announcer('n-attacker')
    await expect(attacker.announce({ address: a, node: 'n-victim', endpoint: 'http://127.0.0.1:9/secret', ttlSec: 600 })).rejects.toMatchObject({
      code: 'Forbidden',
      details: { reason: 'not_own_node' },
    })
    // An all-scope token of another subject (an operator's, say) cannot either.
    const operator = createIndexClient(env.transport, { token: env.issuer.mint({ sub: 'admin', scope: ['index:announce', 'index:write', 'index:admin'], aud: 'index' }) })
    await expect(operator.announce({ address: a, node: 'n-victim', endpoint: 'http://127.0.0.1:9/secret', ttlSec: 600 })).rejects.toMatchObject({ details: { reason: 'not_own_node' } })
    expect(await refusedCount(env, 'not_own_node')).toBe(2)
    // Its own record sits beside the victim's; it replaces nothing.
    await attacker.announce({ address: a, node: 'n-attacker', endpoint: 'http://attacker:7701', ttlSec: 600 })
    const r = await env.anon.providers(a, { fresh: true })
    expect(r.providers.map((p) => [p.node, p.endpoint]).sort()).toEqual([
      ['n-attacker', 'http://attacker:7701'],
      ['n-victim', 'http://victim:7701'],
    ])
  })

  it('without a node directory: endpoints are http(s) URLs or transport target names, nothing else', async () => {
    env = await setup()
    const me = env.announcer('n1')
    const a = addr('endpoints')
    for (const endpoint of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/html,<script>x</script>', 'http://user:pw@host:7701', 'http://host:7701/?x=1', 'http://host:7701/#f', 'gopher://host/', '../storage', 'a b']) {
      await expect(me.announce({ address: a, node: 'n1', endpoint, ttlSec: 60 }), endpoint).rejects.toMatchObject({ code: 'Malformed', details: { field: 'endpoint', reason: 'bad_endpoint' } })
    }
    expect(await refusedCount(env, 'bad_endpoint')).toBe(9)
    await me.announce({ address: a, node: 'n1', endpoint: 'storage-b', ttlSec: 60 })
    await me.announce({ address: addr('x'), node: 'n1', endpoint: 'https://n1.example:7701/', ttlSec: 60 })
    expect((await env.anon.providers(addr('x'))).providers[0]?.endpoint).toBe('https://n1.example:7701')
  })

  it('with a node directory: the endpoint must be a URL the announcing node advertises', async () => {
    const me = testNode({ storage: 'http://10.0.0.1:7701', index: 'http://10.0.0.1:7704' })
    const peer = testNode({ storage: 'http://10.0.0.2:7701' })
    env = await setup({ identity: me.identity, nodes: directory(me, peer) })
    const a = addr('dir')
    const ownToken = env.announcer(peer.identity.id)
    // Its own storage URL (any spelling of it) is fine.
    await ownToken.announce({ address: a, node: peer.identity.id, endpoint: 'http://10.0.0.2:7701/', ttlSec: 60 })
    // Another node's URL, this node's URL, an internal URL nobody advertises, a target name: refused.
    for (const endpoint of ['http://10.0.0.1:7701', 'http://127.0.0.1:7701/secret', 'http://169.254.169.254/latest/meta-data']) {
      await expect(ownToken.announce({ address: a, node: peer.identity.id, endpoint, ttlSec: 60 }), endpoint).rejects.toMatchObject({ code: 'Forbidden', details: { reason: 'unknown_endpoint' } })
    }
    await expect(ownToken.announce({ address: a, node: peer.identity.id, endpoint: 'storage', ttlSec: 60 })).rejects.toMatchObject({ code: 'Malformed', details: { reason: 'bad_endpoint' } })
    // A node nobody pinned has no endpoint to announce.
    const stranger = testNode({ storage: 'http://10.0.0.9:7701' })
    await expect(env.announcer(stranger.identity.id).announce({ address: a, node: stranger.identity.id, endpoint: 'http://10.0.0.9:7701', ttlSec: 60 })).rejects.toMatchObject({
      details: { reason: 'unknown_endpoint' },
    })
    // This node announces its own storage.
    await env.announcer(me.identity.id).announce({ address: a, node: me.identity.id, endpoint: 'http://10.0.0.1:7701', ttlSec: 60 })
    const r = await env.anon.providers(a, { fresh: true })
    expect(r.providers.map((p) => p.endpoint).sort()).toEqual(['http://10.0.0.1:7701', 'http://10.0.0.2:7701'])
    expect(await refusedCount(env, 'unknown_endpoint')).toBe(4)
  })

  it('over real sockets: the SSRF announcement of an internal URL for a victim node is refused', async () => {
    const issuer = createTestIssuer()
    const victim = testNode({ storage: 'http://127.0.0.1:1' })
    const attackerNode = testNode({ storage: 'http://127.0.0.1:2' })
    const me = testNode()
    const index = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, identity: me.identity, nodes: directory(me, victim, attackerNode) })
    closers.push(() => index.close())
    const server = await serve(index)
    closers.push(() => server.close())
    const client = new HttpTransport()
    closers.push(() => client.close())
    const attacker = createIndexClient(client, { target: server.url, token: issuer.mint({ sub: `node:${attackerNode.identity.id}`, scope: 'index:announce', aud: 'index' }) })
    const a = addr('ssrf')
    const secret = 'http://127.0.0.1:7/secret'
    await expect(attacker.announce({ address: a, node: victim.identity.id, endpoint: secret, ttlSec: 600 })).rejects.toMatchObject({ code: 'Forbidden', details: { reason: 'not_own_node' } })
    await expect(attacker.announce({ address: a, node: attackerNode.identity.id, endpoint: secret, ttlSec: 600 })).rejects.toMatchObject({ code: 'Forbidden', details: { reason: 'unknown_endpoint' } })
    const res = await fetch(`${server.url}/providers/${a}`)
    expect(res.status).toBe(404)
    await res.body?.cancel()
  })
})
