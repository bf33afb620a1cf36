/**
 * Signed name records (SPEC §6a): a name's home signs `{name, manifestAddress, seq, node,
 * signedAt}`; a peer's answer is believed only when it verifies under the pinned key of that
 * home; a name homed here is never replaced by a peer's record; a write of a name homed elsewhere
 * is 409 with `details.home`; between two remote homes the lower node id wins, and the conflict
 * is reported.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ed25519 } from '@noble/curves/ed25519.js'
import { addressOf, verifyNodeSignature } from '@ron/core'
import type { Address } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { NAME_RECORD_DOMAIN, createIndexClient, nameRecordBytes, signNameRecord, verifyNameRecord } from '../src/index.js'
import type { NameResolution } from '../src/index.js'
import { FakePeer, directory, manifestFor, nameAnswer, setup, signed, testNode, type Env, type TestNode } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

async function metricValue(e: Env, name: string, label?: string): Promise<number> {
  const line = (await e.index.metricsText()).split('\n').find((l) => l.startsWith(name) && (label === undefined || l.includes(label)))
  return Number(line?.split(' ').pop())
}

const rejected = (e: Env, reason: string): Promise<number> => metricValue(e, 'rejected_total', `reason="${reason}"`)

/** An index `me` that knows `others`, with one fake peer index `peer-1` answering through `reply`. */
async function withPeer(others: TestNode[], config: Parameters<typeof setup>[0] = {}): Promise<{ env: Env; me: TestNode; peer: FakePeer; clock: VirtualClock }> {
  const clock = new VirtualClock(5_000_000)
  const me = testNode()
  env = await setup({ identity: me.identity, nodes: directory(me, ...others), peers: { targets: ['peer-1'], alpha: 1, beta: 0 }, ...config }, { clock })
  const peer = new FakePeer(clock)
  env.transport.mount('peer-1', peer)
  return { env, me, peer, clock }
}

describe('the record and its signed bytes', () => {
  it('signs "ron:name:v1\\n" + the RFC 8785 JSON of the five fields, verifiable by any Ed25519 implementation', () => {
    const home = testNode()
    const ma = addressOf(new TextEncoder().encode('m'))
    const r = signNameRecord(home.identity, { name: 'docs.alice', manifestAddress: ma, seq: 7, node: home.identity.id, signedAt: 1_700_000_000_123 })
    const bytes = nameRecordBytes(r)
    expect(new TextDecoder().decode(bytes)).toBe(`${NAME_RECORD_DOMAIN}{"manifestAddress":"${ma}","name":"docs.alice","node":"${home.identity.id}","seq":7,"signedAt":1700000000123}`)
    expect(verifyNodeSignature(home.identity.publicKey, bytes, Buffer.from(r.sig, 'base64url'))).toBe(true)
    // An independent implementation agrees.
    expect(ed25519.verify(Buffer.from(r.sig, 'base64url'), bytes, Buffer.from(home.identity.publicKey, 'base64url'))).toBe(true)
    // A tombstone signs manifestAddress null.
    const t = signed(home, 'docs.alice', null, 8)
    expect(new TextDecoder().decode(nameRecordBytes(t))).toContain('{"manifestAddress":null,"name":"docs.alice"')
    // Verification: under the home's pinned key only, every field covered.
    const me = testNode()
    const dir = directory(me, home)
    expect(verifyNameRecord(r, 'docs.alice', dir)).toMatchObject({ ok: true })
    expect(verifyNameRecord(r, 'docs.bob', dir)).toEqual({ ok: false, reason: 'name_bad_signature' })
    for (const tampered of [{ ...r, seq: 8 }, { ...r, signedAt: 1 }, { ...r, manifestAddress: null }]) expect(verifyNameRecord(tampered, 'docs.alice', dir)).toEqual({ ok: false, reason: 'name_bad_signature' })
    expect(verifyNameRecord(r, 'docs.alice', directory(me))).toEqual({ ok: false, reason: 'name_unknown_home' })
    expect(verifyNameRecord({ ...r, extra: 1 }, 'docs.alice', dir)).toEqual({ ok: false, reason: 'name_unsigned' })
    expect(verifyNameRecord(undefined, 'docs.alice', dir)).toEqual({ ok: false, reason: 'name_unsigned' })
  })
})

describe('a lying peer is not believed', () => {
  it('a self-consistent answer for victim.bank is refused unless the home signed it, and each refusal is counted', async () => {
    const home = testNode()
    const liar = testNode()
    const stranger = testNode()
    const { env, peer } = await withPeer([home, liar])
    const forged = manifestFor('phishing')
    const genuine = manifestFor('the bank')
    const forgedAddress = addressOf(new TextEncoder().encode(JSON.stringify(forged)))
    const cases: Array<[string, unknown]> = [
      // No record at all (the attack as it was: the manifest text does hash to its address).
      ['name_unsigned', nameAnswer('victim.bank', forged)],
      // The liar signs with its own key but names the home.
      ['name_bad_signature', nameAnswer('victim.bank', forged, { record: { ...signed(liar, 'victim.bank', forgedAddress), node: home.identity.id } })],
      // A node nobody pinned.
      ['name_unknown_home', nameAnswer('victim.bank', forged, { home: stranger })],
      // The home's record for the genuine manifest, replayed with the forged one.
      ['name_bad_signature', nameAnswer('victim.bank', forged, { record: signed(home, 'victim.bank', addressOf(new TextEncoder().encode(JSON.stringify(genuine)))) })],
      // The home's record for another name.
      ['name_bad_signature', nameAnswer('victim.bank', forged, { record: signed(home, 'other.bank', forgedAddress) })],
    ]
    for (const [reason, json] of cases) {
      const before = await rejected(env, reason)
      peer.reply = () => ({ status: 200, json })
      await expect(env.anon.resolve('victim.bank', { fresh: true }), reason).rejects.toMatchObject({ code: 'NotFound' })
      expect(await rejected(env, reason), reason).toBe(before + 1)
    }
    // Nothing refused was cached: the genuine answer is served as soon as a peer gives it.
    peer.reply = () => ({ status: 200, json: nameAnswer('victim.bank', genuine, { home }) })
    const r = await env.anon.resolve('victim.bank', { fresh: true })
    expect(r).toMatchObject({ manifest: genuine, source: 'peer', record: { node: home.identity.id } })
  })

  it('a listed peer may bind a name nobody else holds, under its own key (what listing a peer trusts it with)', async () => {
    const liar = testNode()
    const { env, peer } = await withPeer([liar])
    peer.reply = () => ({ status: 200, json: nameAnswer('unclaimed.name', manifestFor('x'), { home: liar }) })
    await expect(env.anon.resolve('unclaimed.name')).resolves.toMatchObject({ record: { node: liar.identity.id } })
  })

  it('without a node directory no peer name answer is believed', async () => {
    const home = testNode()
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1'] } }, { clock })
    const peer = new FakePeer(clock)
    env.transport.mount('peer-1', peer)
    peer.reply = () => ({ status: 200, json: nameAnswer('site.x', manifestFor('x'), { home }) })
    await expect(env.anon.resolve('site.x')).rejects.toMatchObject({ code: 'NotFound' })
    expect(await rejected(env, 'name_unknown_home')).toBe(1)
  })

  it('highest seq first: an older record of the same home is refused once a newer one (or its tombstone) is known', async () => {
    const home = testNode()
    const { env, peer } = await withPeer([home])
    const v1 = manifestFor('v1')
    const v2 = manifestFor('v2')
    peer.reply = () => ({ status: 200, json: nameAnswer('site.seq', v2, { home, seq: 2 }) })
    await expect(env.anon.resolve('site.seq', { fresh: true })).resolves.toMatchObject({ manifest: v2, record: { seq: 2 } })
    // A peer whose cache still holds seq 1.
    peer.reply = () => ({ status: 200, json: nameAnswer('site.seq', v1, { home, seq: 1 }) })
    await expect(env.anon.resolve('site.seq', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    expect(await rejected(env, 'name_stale')).toBe(1)
    // The home deletes the name: its NotFound carries the signed tombstone (seq 3).
    const tombstone = signed(home, 'site.seq', null, 3)
    peer.reply = () => ({ status: 404, json: { error: { code: 'NotFound', message: 'x', retryable: false, corr_id: 'x', details: { key: 'site.seq', reason: 'deleted', record: tombstone } } } })
    await expect(env.anon.resolve('site.seq', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    // Now even seq 2 is old news.
    peer.reply = () => ({ status: 200, json: nameAnswer('site.seq', v2, { home, seq: 2 }) })
    await expect(env.anon.resolve('site.seq', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    expect(await rejected(env, 'name_stale')).toBe(2)
  })

  it('a fresh NotFound from the home (a tombstone) replaces the cached binding', async () => {
    const home = testNode()
    const { env, peer } = await withPeer([home])
    const v1 = manifestFor('v1')
    peer.reply = () => ({ status: 200, json: nameAnswer('site.gone', v1, { home, seq: 1 }) })
    await expect(env.anon.resolve('site.gone')).resolves.toMatchObject({ manifest: v1 })
    await expect(env.anon.resolve('site.gone')).resolves.toMatchObject({ source: 'cache' })
    const tombstone = signed(home, 'site.gone', null, 2)
    peer.reply = () => ({ status: 404, json: { error: { code: 'NotFound', message: 'x', retryable: false, corr_id: 'x', details: { key: 'site.gone', reason: 'deleted', record: tombstone } } } })
    await expect(env.anon.resolve('site.gone', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    // A cached read (the gateway's) no longer serves v1.
    await expect(env.anon.resolve('site.gone')).rejects.toMatchObject({ code: 'NotFound' })
  })

  it('two remote homes for one name: the lower node id wins and the conflict is reported', async () => {
    const [low, high] = [testNode(), testNode()].sort((a, b) => (a.identity.id < b.identity.id ? -1 : 1)) as [TestNode, TestNode]
    const { env, peer } = await withPeer([low, high])
    const mHigh = manifestFor('high')
    const mLow = manifestFor('low')
    peer.reply = () => ({ status: 200, json: nameAnswer('two.homes', mHigh, { home: high, seq: 9 }) })
    await expect(env.anon.resolve('two.homes', { fresh: true })).resolves.toMatchObject({ manifest: mHigh })
    peer.reply = () => ({ status: 200, json: nameAnswer('two.homes', mLow, { home: low, seq: 1 }) })
    await expect(env.anon.resolve('two.homes', { fresh: true })).resolves.toMatchObject({ manifest: mLow, record: { node: low.identity.id } })
    // The higher id's claim no longer counts, whatever its seq.
    peer.reply = () => ({ status: 200, json: nameAnswer('two.homes', mHigh, { home: high, seq: 10 }) })
    await expect(env.anon.resolve('two.homes', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    expect(env.index.conflicts()).toEqual([{ name: 'two.homes', homes: [low.identity.id, high.identity.id], winner: low.identity.id, seenAt: expect.any(Number) as number }])
    expect(await metricValue(env, 'index_name_conflicts')).toBe(1)
  })
})

describe('homes', () => {
  it('a name homed here is never replaced by a peer record, not even after its delete', async () => {
    const other = testNode()
    const { env, peer, me } = await withPeer([other])
    const mine = await env.put(manifestFor('mine'))
    await env.client.setName('my.name', mine)
    peer.reply = () => ({ status: 200, json: nameAnswer('my.name', manifestFor('theirs'), { home: other, seq: 99 }) })
    await expect(env.anon.resolve('my.name', { fresh: true })).resolves.toMatchObject({ manifestAddress: mine, source: 'local', record: { node: me.identity.id, seq: 1 } })
    await env.client.deleteName('my.name')
    // The delete is final here: the peer is not asked, the tombstone answers.
    const calls = peer.calls.length
    const nf = env.anon.resolve('my.name', { fresh: true })
    await expect(nf).rejects.toMatchObject({ code: 'NotFound', details: { reason: 'deleted', record: { name: 'my.name', manifestAddress: null, seq: 2, node: me.identity.id } } })
    expect(peer.calls.length).toBe(calls)
    // And a record of this node's own that a peer still holds is old news.
    peer.reply = () => ({ status: 200, json: nameAnswer('gone.name', manifestFor('g'), { home: me }) })
    await expect(env.anon.resolve('gone.name', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    expect(await rejected(env, 'name_stale')).toBe(1)
  })

  it('a write or delete of a name homed elsewhere answers 409 with details.home (the home admin URL)', async () => {
    const home = testNode({}, 'http://home.example:7700')
    const { env, peer } = await withPeer([home])
    peer.reply = (k) => (k === 'their.name' ? { status: 200, json: nameAnswer('their.name', manifestFor('t'), { home }) } : { status: 404 })
    const m = await env.put(manifestFor('mine'))
    const storageReads = env.storage.reads
    await expect(env.client.setName('their.name', m)).rejects.toMatchObject({
      code: 'Conflict',
      details: { reason: 'home_elsewhere', node: home.identity.id, home: 'http://home.example:7700' },
    })
    await expect(env.client.deleteName('their.name')).rejects.toMatchObject({ code: 'Conflict', details: { home: 'http://home.example:7700' } })
    // Refused before anything was fetched or written.
    expect(env.storage.reads).toBe(storageReads)
    await expect(env.anon.listNames()).resolves.toEqual({ names: [], cursor: null })
    expect(await metricValue(env, 'index_name_writes_total', 'result="home_elsewhere"')).toBe(2)
    // A name nobody holds is created here.
    await expect(env.client.setName('free.name', m)).resolves.toMatchObject({ seq: 1 })
  })

  it('seq counts every write of the home, deletes included; the tombstone lives tombstoneTtlSec', async () => {
    const clock = new VirtualClock(9_000_000)
    const me = testNode()
    env = await setup({ identity: me.identity, nodes: directory(me), tombstoneTtlSec: 60, purgeIntervalMs: 1_000 }, { clock })
    const a = await env.put(manifestFor('a'))
    const b = await env.put(manifestFor('b'))
    expect((await env.client.setName('s.x', a)).seq).toBe(1)
    expect((await env.client.setName('s.x', b)).seq).toBe(2)
    expect((await env.client.deleteName('s.x')).seq).toBe(3)
    expect((await env.client.setName('s.x', a)).seq).toBe(4)
    const r = (await env.anon.resolve('s.x')) as NameResolution
    expect(verifyNameRecord(r.record, 's.x', directory(me))).toMatchObject({ ok: true, record: { seq: 4, manifestAddress: a, signedAt: 9_000_000 } })
    expect((await env.client.deleteName('s.x')).seq).toBe(5)
    // Past the keeping time the janitor purges the tombstone: the name starts over.
    await clock.advance(61_000)
    await clock.advance(1_000)
    expect((await env.client.setName('s.x', b)).seq).toBe(1)
  })
})

describe('GET /names', () => {
  async function bind(e: Env, names: string[]): Promise<Address> {
    const m = await e.put(manifestFor('list'))
    for (const n of names) await e.client.setName(n, m)
    return m
  }

  it('lists the names homed here in name order, by prefix, a page at a time, each with its signed record', async () => {
    const me = testNode()
    env = await setup({ identity: me.identity, nodes: directory(me) })
    const m = await bind(env, ['b.docs', 'a.docs', 'c.docs', 'zzz', 'docs'])
    const page1 = await env.anon.listNames({ limit: 2 })
    expect(page1.names.map((n) => n.name)).toEqual(['a.docs', 'b.docs'])
    expect(page1.cursor).toBe('b.docs')
    const page2 = await env.anon.listNames({ limit: 2, cursor: page1.cursor! })
    expect(page2.names.map((n) => n.name)).toEqual(['c.docs', 'docs'])
    const page3 = await env.anon.listNames({ limit: 2, cursor: page2.cursor! })
    expect(page3).toMatchObject({ names: [{ name: 'zzz' }], cursor: null })
    expect((await env.anon.listNames({ prefix: 'c' })).names.map((n) => n.name)).toEqual(['c.docs'])
    for (const n of page1.names) expect(verifyNameRecord(n, n.name, directory(me))).toMatchObject({ ok: true, record: { manifestAddress: m } })
    await env.client.deleteName('b.docs')
    expect((await env.anon.listNames()).names.map((n) => n.name)).toEqual(['a.docs', 'c.docs', 'docs', 'zzz'])
    for (const q of ['limit=0', 'limit=1001', 'limit=x', 'prefix=A', `prefix=${'a'.repeat(254)}`, 'cursor=..']) {
      const res = await env.request('GET', `/names?${q}`)
      expect(res.status, q).toBe(400)
      expect(await res.json(), q).toMatchObject({ error: { code: 'Malformed' } })
    }
  })
})

describe('the namePrefix caveat', () => {
  it('a token limited to docs.alice writes docs.alice and names under it, nothing else (403 caveat)', async () => {
    env = await setup()
    const m = await env.put(manifestFor('p'))
    const alice = createIndexClient(env.transport, { token: env.issuer.mint({ scope: 'index:write', aud: 'index', ron: { namePrefix: 'docs.alice' } }) })
    await expect(alice.setName('docs.alice', m)).resolves.toMatchObject({ seq: 1 })
    await expect(alice.setName('blog.docs.alice', m)).resolves.toMatchObject({ seq: 1 })
    await env.client.setName('docs.bob', m)
    const reads = env.storage.reads
    for (const name of ['docs.bob', 'alice', 'xdocs.alice', 'docs.alice.evil']) {
      await expect(alice.setName(name, m), name).rejects.toMatchObject({ code: 'Forbidden', details: { reason: 'caveat', caveat: 'namePrefix', namePrefix: 'docs.alice' } })
      await expect(alice.deleteName(name), name).rejects.toMatchObject({ code: 'Forbidden', details: { caveat: 'namePrefix' } })
    }
    expect(env.storage.reads).toBe(reads)
    await expect(env.anon.resolve('docs.bob')).resolves.toMatchObject({ manifestAddress: m })
    await expect(alice.deleteName('blog.docs.alice')).resolves.toMatchObject({ deleted: true })
  })
})
