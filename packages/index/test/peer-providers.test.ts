/**
 * A peer relays announcements, it does not make them (SPEC §6a "Announcements belong to their
 * node"): the providers of a peer's answer are passed on only when their endpoint is a URL the node
 * they name advertises. A lying peer listing an internal URL, another node's URL or a target name
 * for any node — this one included — gets nothing passed on, displaces no genuine record, and is
 * counted (`rejected_total{reason="provider_unknown_endpoint"}`).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { addressOf } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { FakePeer, addr, directory, manifestFor, nameAnswer, setup, testNode, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

async function unknownEndpoints(e: Env): Promise<number> {
  const line = (await e.index.metricsText()).split('\n').find((l) => l.startsWith('rejected_total') && l.includes('reason="provider_unknown_endpoint"'))
  return Number(line?.split(' ').pop())
}

/** Provider entries a lying peer makes up: internal URLs, a target name, `javascript:`, a node nobody pinned. */
function lies(me: string, other: string): Array<{ node: string; endpoint: string; score: number }> {
  return [
    { node: other, endpoint: 'http://169.254.169.254/latest/meta-data', score: 1 },
    { node: me, endpoint: 'http://127.0.0.1:1/secret', score: 1 },
    { node: other, endpoint: 'storage', score: 1 },
    { node: other, endpoint: 'javascript:alert(1)', score: 1 },
    // A URL the *other* node advertises, claimed for this node.
    { node: me, endpoint: 'http://b.example:7701', score: 1 },
    { node: 'n00000000000000ff', endpoint: 'http://x.example:7701', score: 1 },
  ]
}

describe('providers in a peer answer', () => {
  it('an address answer of made-up endpoints is dropped whole and counted; another peer’s genuine answer is served', async () => {
    const clock = new VirtualClock(5_000_000)
    const me = testNode({ storage: 'http://me.example:7701' })
    const b = testNode({ storage: 'http://b.example:7701', index: 'http://b.example:7704' })
    env = await setup({ identity: me.identity, nodes: directory(me, b), peers: { targets: ['liar', 'honest'], alpha: 1, beta: 1, hedgeMs: 10_000 } }, { clock })
    const a = addr('relayed')
    const liar = new FakePeer(clock)
    liar.reply = (key) => ({ status: 200, json: { key, providers: lies(me.identity.id, b.identity.id), source: 'local', ttlSec: 10 } })
    const honest = new FakePeer(clock)
    honest.reply = (key) => ({ status: 200, json: { key, providers: [{ node: b.identity.id, endpoint: 'http://b.example:7701/', score: 1 }], source: 'local', ttlSec: 10 } })
    env.transport.mount('liar', liar)
    env.transport.mount('honest', honest)

    const r = await env.anon.resolve(a, { fresh: true })
    // The liar was asked first and its answer did not satisfy the lookup: the honest one was asked at once.
    expect(liar.calls).toEqual([a])
    expect(honest.calls).toEqual([a])
    expect(r.providers.map((p) => [p.node, p.endpoint])).toEqual([[b.identity.id, 'http://b.example:7701/']])
    expect(await unknownEndpoints(env)).toBe(6)
  })

  it('a made-up provider in a name answer never displaces a node’s genuine record, this node’s included', async () => {
    const clock = new VirtualClock(5_000_000)
    const me = testNode({ storage: 'http://me.example:7701' })
    const home = testNode({ storage: 'http://b.example:7701' })
    env = await setup({ identity: me.identity, nodes: directory(me, home), peers: { targets: ['peer-1'], alpha: 1, beta: 0 } }, { clock })
    const manifest = manifestFor('site')
    // This node holds the content itself (its own storage announced it).
    await env.announcer(me.identity.id).announce({ address: manifest.content, node: me.identity.id, endpoint: 'http://me.example:7701', ttlSec: 600 })
    const peer = new FakePeer(clock)
    peer.reply = () => ({ status: 200, json: nameAnswer('docs.site', manifest, { home, providers: [...lies(me.identity.id, home.identity.id), { node: home.identity.id, endpoint: 'http://b.example:7701', score: 0.5 }] }) })
    env.transport.mount('peer-1', peer)

    const r = await env.anon.resolve('docs.site', { fresh: true })
    expect(r).toMatchObject({ manifestAddress: addressOf(new TextEncoder().encode(JSON.stringify(manifest))), source: 'peer' })
    const byNode = Object.fromEntries(r.providers.map((p) => [p.node, p.endpoint]))
    // Each node is listed at the URL it advertises; the liar's higher-scored entries are gone.
    expect(byNode).toEqual({ [me.identity.id]: 'http://me.example:7701', [home.identity.id]: 'http://b.example:7701' })
    expect(await unknownEndpoints(env)).toBe(6)
  })

  it('without a node directory (embedded, in-process transports) a peer’s providers are passed on as they are', async () => {
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1'], alpha: 1, beta: 0 } }, { clock })
    const peer = new FakePeer(clock)
    peer.reply = (key) => ({ status: 200, json: { key, providers: [{ node: 'storage-b', endpoint: 'storage-b', score: 1 }], source: 'local', ttlSec: 10 } })
    env.transport.mount('peer-1', peer)
    const r = await env.anon.resolve(addr('embedded'))
    expect(r.providers).toEqual([expect.objectContaining({ node: 'storage-b', endpoint: 'storage-b' })])
    expect(await unknownEndpoints(env)).toBe(0)
  })
})
