/**
 * Names bound to directory manifests (SPEC §6a "Directory manifests"): index checks the manifest
 * on the write like a file manifest, keeps only its address, and answers with that address (never
 * its text) and the providers of the manifest itself; a peer's directory answer is believed on the
 * record its home signed, and never carries a manifest of the peer's making.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MAX_MANIFEST_BYTES, addressOf, dirManifest, type DirEntry } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { FakePeer, addr, directory, manifestFor, setup, signed, testNode, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

const entries = (n: number, pad = 0): DirEntry[] =>
  Array.from({ length: n }, (_, i) => ({ path: `${pad > 0 ? `${'p'.repeat(pad)}/` : ''}file-${String(i).padStart(5, '0')}.html`, content: addr(i), size: 100, type: 'text/html; charset=utf-8' }))

describe('directory manifests in index', () => {
  it('binds a name to a directory manifest; resolve answers its address, kind "dir" and the providers of the manifest, not its text', async () => {
    env = await setup({}, { clock: new VirtualClock(1_000_000) })
    const { bytes } = dirManifest([{ path: 'index.html', content: addr('i'), size: 5, type: 'text/html; charset=utf-8' }])
    const ma = await env.put(bytes)
    await env.announcer('node-a').announce({ address: ma, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 60 })
    expect(await env.client.setName('site.alice', ma)).toMatchObject({ manifestAddress: ma, previous: null, seq: 1 })
    const r = await env.anon.resolve('site.alice')
    expect(r).toMatchObject({ key: 'site.alice', manifestAddress: ma, kind: 'dir', record: { manifestAddress: ma, seq: 1 } })
    expect(r).not.toHaveProperty('manifest')
    expect(r).not.toHaveProperty('manifestText')
    expect(r.providers).toEqual([{ node: 'node-a', endpoint: 'http://node-a:7701', score: 1 }])
    // Even a peer index gets no text for a directory.
    const peerRes = await env.request('GET', '/resolve/site.alice', { 'x-ron-peer': '1' })
    const body = await peerRes.json<Record<string, unknown>>()
    expect(body).toMatchObject({ manifestAddress: ma, kind: 'dir' })
    expect(body['manifestText']).toBeUndefined()
    // A file manifest says kind "file".
    const fa = await env.put(manifestFor(1))
    await env.client.setName('file.alice', fa)
    expect(await env.anon.resolve('file.alice')).toMatchObject({ kind: 'file', manifest: manifestFor(1) })
  })

  it('accepts a directory manifest up to 2 MiB and refuses a larger one, an unsorted one and one that climbs with 422', async () => {
    env = await setup()
    // About 1.9 MiB of manifest: over the old 64 KiB cap, under the new one.
    const big = dirManifest(entries(8000, 100))
    expect(big.bytes.byteLength).toBeGreaterThan(1.5 * 1024 * 1024)
    expect(big.bytes.byteLength).toBeLessThanOrEqual(MAX_MANIFEST_BYTES)
    await expect(env.client.setName('big.alice', await env.put(big.bytes))).resolves.toMatchObject({ seq: 1 })
    const tooBig = new TextEncoder().encode(JSON.stringify({ kind: 'dir', entries: entries(10_000, 120) }))
    expect(tooBig.byteLength).toBeGreaterThan(MAX_MANIFEST_BYTES)
    await expect(env.client.setName('huge.alice', await env.put(tooBig))).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'too_large' } })
    const e = entries(2)
    const unsorted = await env.put(JSON.stringify({ kind: 'dir', entries: [e[1], e[0]] }))
    await expect(env.client.setName('bad.alice', unsorted)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'not_a_manifest' } })
    const climbs = await env.put(JSON.stringify({ kind: 'dir', entries: [{ ...e[0], path: '../etc/passwd' }] }))
    await expect(env.client.setName('bad.alice', climbs)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'not_a_manifest' } })
    await expect(env.anon.resolve('bad.alice')).rejects.toMatchObject({ code: 'NotFound' })
  })

  it("a peer's directory answer is believed on its home's signed record only", async () => {
    const clock = new VirtualClock(5_000_000)
    const me = testNode()
    const home = testNode()
    const liar = testNode()
    env = await setup({ identity: me.identity, nodes: directory(me, home, liar), peers: { targets: ['peer-1'], alpha: 1, beta: 0 } }, { clock })
    const peer = new FakePeer(clock)
    env.transport.mount('peer-1', peer)
    const genuine = addressOf(dirManifest(entries(1)).bytes)
    const forged = addressOf(dirManifest(entries(2)).bytes)
    const answer = (manifestAddress: string, record: unknown): unknown => ({ key: 'site.bank', manifestAddress, kind: 'dir', record, providers: [], source: 'local', ttlSec: 10 })
    // The liar's own record for a name homed on `home` is the liar's claim, and `home`'s record
    // for the genuine manifest does not cover the forged one.
    for (const json of [answer(forged, { ...signed(liar, 'site.bank', forged), node: home.identity.id }), answer(forged, signed(home, 'site.bank', genuine)), answer(forged, undefined)]) {
      peer.reply = () => ({ status: 200, json })
      await expect(env.anon.resolve('site.bank', { fresh: true })).rejects.toMatchObject({ code: 'NotFound' })
    }
    peer.reply = () => ({ status: 200, json: answer(genuine, signed(home, 'site.bank', genuine)) })
    const r = await env.anon.resolve('site.bank', { fresh: true })
    expect(r).toMatchObject({ manifestAddress: genuine, kind: 'dir', source: 'peer', record: { node: home.identity.id } })
    expect(r).not.toHaveProperty('manifest')
  })
})
