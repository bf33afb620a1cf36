import { afterEach, describe, expect, it } from 'vitest'
import { blake3, canonicalJson, isRonError, toAddress } from '@ron/core'
import { memoryRequest } from '@ron/core/testing'
import { checkpointTreeHash, parseCheckpoint, verifyNote } from '../src/checkpoint.js'
import { payloadB3 } from '../src/descriptors.js'
import { sha256TreeHasher, verifyInclusion } from '../src/merkle.js'
import { createRegistryService } from '../src/service.js'
import { encodeBundle, encodeTileIndex, parseBundle, parseTilePath, tilePath, tilesOf } from '../src/tiles.js'
import { ORIGIN, approve, harness, payload, setOf, signers, tempDir, type Harness } from './helpers.js'
import { logView } from '../src/log-view.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

async function commit(x: Harness, p = payload(x.svc.head().version + 1)): Promise<number> {
  const pr = await x.client.propose(p)
  return (await x.client.commit(pr.proposalId, { approvals: approve(x.keys.slice(0, 2), pr.baseVersion, pr.payloadB3) })).version
}

async function get(x: Harness, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
  const r = await memoryRequest(x.svc, { method: 'GET', path, headers })
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.bytes()) }
}

const big = (n: number): Parameters<typeof payload>[1] & object => ({ items: [{ kind: 'policy', name: `big-${n}`, rules: { blob: 'x'.repeat(70_000) } }] })

describe('C2SP tile coordinates and entry bundles', () => {
  it('encodes indexes in 3-digit elements and parses only the canonical spelling', () => {
    expect(encodeTileIndex(0)).toBe('000')
    expect(encodeTileIndex(1234067)).toBe('x001/x234/067')
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).toBe('tile/0/x001/x234/067')
    expect(tilePath({ level: 'entries', index: 5, width: 17 })).toBe('tile/entries/005.p/17')
    expect(parseTilePath(['0', 'x001', 'x234', '067'])).toEqual({ level: 0, index: 1234067, width: 256 })
    expect(parseTilePath(['entries', '005.p', '17'])).toEqual({ level: 'entries', index: 5, width: 17 })
    for (const bad of [['0', 'x000', '001'], ['00', '000'], ['64', '000'], ['0', '1'], ['0', '000.p', '256'], ['0', '000.p', '0'], ['0', '000.p', '017'], ['0', '001', '002'], ['x', '000'], ['0']]) {
      expect(parseTilePath(bad), bad.join('/')).toBeUndefined()
    }
  })

  it('lists the tiles of a tree as C2SP counts them (70 000 leaves: 273 full + 112, 1 full + 17, 1)', () => {
    expect(tilesOf(70_000)).toEqual([
      { level: 0, full: 273, partial: 112 },
      { level: 1, full: 1, partial: 17 },
      { level: 2, full: 0, partial: 1 },
    ])
    expect(tilesOf(256)).toEqual([
      { level: 0, full: 1, partial: 0 },
      { level: 1, full: 0, partial: 1 },
    ])
    expect(tilesOf(0)).toEqual([])
  })

  it('bundles are uint16 length-prefixed leaves; a leaf over 65 535 bytes does not fit; truncation is refused', () => {
    const leaves = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(65_535, 1)]
    const b = encodeBundle(leaves)
    expect(b.length).toBe(3 * 2 + 1 + 65_535)
    expect(parseBundle(b).map((l) => Buffer.from(l))).toEqual(leaves)
    expect(() => encodeBundle([Buffer.alloc(65_536)])).toThrow(RangeError)
    expect(() => parseBundle(b.subarray(0, b.length - 1))).toThrow(/inside a leaf/)
    expect(() => parseBundle(Buffer.from([0]))).toThrow(/length/)
  })
})

describe('the tiles API', () => {
  it('every commit is checkpointed before it is answered: SHA-256, stated in the checkpoint', async () => {
    h = await harness()
    expect(parseCheckpoint(verifyNote(h.svc.signedCheckpoint(), h.svc.logKey).text)).toMatchObject({ treeSize: 0, extensions: ['tree-hash sha256'] })
    for (let i = 1; i <= 3; i++) {
      const v = await commit(h)
      const note = await h.client.checkpoint()
      const cp = parseCheckpoint(verifyNote(note, h.svc.logKey).text)
      expect(cp.treeSize).toBe(v)
      expect(Buffer.from(cp.rootHash).toString('hex')).toBe((await h.client.head()).root)
      expect(checkpointTreeHash(cp)).toBe('sha256')
    }
    // Nothing was stored for them: durable checkpoints follow checkpointIntervalMs.
    expect(logView(h.svc).store.checkpoints()).toHaveLength(0)
  })

  it('serves hash tiles (full immutable, partial short-lived) that match the tree, and bundles of the exact leaves', async () => {
    h = await harness({ segmentEntries: 100 })
    for (let i = 0; i < 260; i++) await commit(h)
    const size = h.svc.head().version
    const full = await get(h, '/registry/tile/0/000')
    expect(full.status).toBe(200)
    expect(full.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(full.headers['content-type']).toBe('application/octet-stream')
    expect(full.body.length).toBe(256 * 32)
    for (let i = 0; i < 256; i++) expect(full.body.subarray(i * 32, (i + 1) * 32)).toEqual(Buffer.from(logView(h.svc).tree.leafHash(i)))
    const partial = await get(h, '/registry/tile/0/001.p/4')
    expect(partial.headers['cache-control']).toBe('public, max-age=60')
    expect(partial.body).toEqual(Buffer.concat([4, 3, 2, 1].reverse().map((k) => Buffer.from(logView(h!.svc).tree.leafHash(255 + k)))))
    // Level 1 holds the root of each full level-0 tile.
    const l1 = await get(h, '/registry/tile/1/000.p/1')
    expect(l1.body).toEqual(Buffer.from(logView(h.svc).tree.root(256)))
    // A narrower partial tile (an older tree size) is served too; a wider one than the tree has is not.
    expect((await get(h, '/registry/tile/0/001.p/2')).body.length).toBe(64)
    expect((await get(h, '/registry/tile/0/001.p/5')).status).toBe(404)
    expect((await get(h, '/registry/tile/0/002')).status).toBe(404)
    expect((await get(h, '/registry/tile/1/000')).status).toBe(404)
    expect((await get(h, '/registry/tile/0/x000/000')).status).toBe(404)
    expect((await get(h, '/registry/tile/0/000.p/256')).status).toBe(404)
    // The cached full tile is found by its URL; other spellings of the same tile (a query,
    // %-escapes) are parsed and answer the same bytes, a non-canonical one still 404s.
    for (const path of ['/registry/tile/0/000', '/registry/tile/0/000?x=1', '/registry/tile/0/%30%30%30', '/registry/tile/%30/000', '/registry/tile/0/000']) {
      const again = await get(h, path)
      expect([again.status, again.headers['cache-control'], again.headers['content-type']]).toEqual([200, 'public, max-age=31536000, immutable', 'application/octet-stream'])
      expect(again.body).toEqual(full.body)
    }
    expect((await get(h, '/registry/tile/0/x000/000')).status).toBe(404)

    const bundle = await get(h, '/registry/tile/entries/000')
    expect(bundle.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    const leaves = parseBundle(bundle.body)
    expect(leaves).toHaveLength(256)
    for (const v of [1, 100, 256]) {
      const leaf = leaves[v - 1]!
      expect(Buffer.from(sha256TreeHasher.leaf(leaf))).toEqual(Buffer.from(logView(h.svc).tree.leafHash(v - 1)))
      expect((await get(h, `/registry/${v}/leaf`)).body).toEqual(Buffer.from(leaf))
      // The leaf is the canonical entry; the JSON view links it and names its hash.
      const view = JSON.parse((await get(h, `/registry/${v}`)).body.toString('utf8')) as Record<string, unknown>
      expect(view).toMatchObject({ version: v, leafIndex: v - 1, leaf: `/registry/${v}/leaf`, leafHash: Buffer.from(logView(h.svc).tree.leafHash(v - 1)).toString('hex') })
      const entry = Object.fromEntries(Object.entries(view).filter(([k]) => !['hash', 'leafIndex', 'leafHash', 'leaf'].includes(k)))
      expect(canonicalJson(entry as never)).toBe(Buffer.from(leaf).toString('utf8'))
    }
    const tail = parseBundle((await get(h, `/registry/tile/entries/001.p/${size - 256}`)).body)
    expect(tail).toHaveLength(size - 256)
    expect((await get(h, `/registry/tile/entries/001.p/${size - 255}`)).status).toBe(404)
    // HEAD requests answer the same headers.
    const head = await memoryRequest(h.svc, { method: 'HEAD', path: '/registry/tile/0/000' })
    expect(head.status).toBe(200)
    await head.dump()
  })

  it('an entry too large for a bundle rides by payloadB3; its payload is served by address', async () => {
    h = await harness()
    await commit(h)
    const v = await commit(h, payload(2, big(2)))
    const entry = await h.client.get(v)
    const leaf = await h.client.leaf(v)
    expect(leaf.length).toBeLessThan(65_536)
    const parsed = JSON.parse(Buffer.from(leaf).toString('utf8')) as Record<string, unknown>
    expect(parsed['payload']).toBeUndefined()
    expect(parsed).toMatchObject({ version: v, payloadB3: entry.payloadB3, prev: entry.prev })
    expect(Buffer.from(sha256TreeHasher.leaf(leaf))).toEqual(Buffer.from(logView(h.svc).tree.leafHash(v - 1)))
    const bytes = await h.client.payload(entry.payloadB3)
    expect(toAddress(blake3(bytes))).toBe(entry.payloadB3)
    expect(payloadB3(JSON.parse(Buffer.from(bytes).toString('utf8')) as never)).toBe(entry.payloadB3)
    expect(parseBundle((await get(h, '/registry/tile/entries/000.p/2')).body)[1]).toEqual(Buffer.from(leaf))
    // A payload that fits its leaf is not kept apart; a malformed address is 400.
    const small = (await h.client.get(1)).payloadB3
    expect((await get(h, `/registry/payload/${small}`)).status).toBe(404)
    expect((await get(h, '/registry/payload/b3:zz')).status).toBe(400)
  })

  it('finds a leaf by its hash (hex or base64) with its inclusion proof', async () => {
    h = await harness()
    for (let i = 0; i < 5; i++) await commit(h)
    const lh = Buffer.from(logView(h.svc).tree.leafHash(2))
    for (const enc of [lh.toString('hex'), lh.toString('base64')]) {
      const p = await h.client.inclusionProofByHash(enc)
      expect(p).toMatchObject({ version: 3, leafIndex: 2, treeSize: 5 })
      expect(verifyInclusion(sha256TreeHasher, 2, 5, lh, p.proof.map((x) => Buffer.from(x, 'hex')), logView(h.svc).tree.root())).toBe(true)
    }
    // Not in the tree of that size, unknown, or ambiguous.
    expect((await get(h, `/registry/proof/inclusion?hash=${lh.toString('hex')}&treeSize=2`)).status).toBe(404)
    expect((await get(h, `/registry/proof/inclusion?hash=${'00'.repeat(32)}`)).status).toBe(404)
    expect((await get(h, `/registry/proof/inclusion?hash=${lh.toString('hex')}&version=3`)).status).toBe(400)
    expect((await get(h, '/registry/proof/inclusion?hash=abc')).status).toBe(400)
  })

  it('pruning keeps the hash tiles: proofs of pruned entries verify; their bundle is 410', async () => {
    h = await harness({ segmentEntries: 2, retention: { maxEntries: 2 } })
    for (let i = 0; i < 7; i++) await commit(h)
    await h.svc.checkpoint()
    await h.svc.prune() // (the checkpoint already asked Retention to run; this is idempotent)
    expect(logView(h.svc).oldest()).toBeGreaterThan(1)
    const bundle = await get(h, '/registry/tile/entries/000.p/7')
    expect(bundle.status).toBe(410)
    expect(JSON.parse(bundle.body.toString('utf8'))).toMatchObject({ error: { code: 'Gone', details: { oldest: logView(h.svc).oldest() } } })
    const tile = await get(h, '/registry/tile/0/000.p/7')
    expect(tile.status).toBe(200)
    const p = await h.client.inclusionProofByHash(tile.body.subarray(0, 32).toString('hex'))
    expect(p.version).toBe(1)
    expect(verifyInclusion(sha256TreeHasher, 0, 7, tile.body.subarray(0, 32), p.proof.map((x) => Buffer.from(x, 'hex')), logView(h.svc).tree.root())).toBe(true)
    expect((await get(h, '/registry/1/leaf')).status).toBe(410)
  })
})

describe('cached full tiles', () => {
  it('a full bundle served (and cached) before retention pruned its entries is 410 after, by any spelling; its hash tile stays', async () => {
    h = await harness({ segmentEntries: 100, retention: { maxAgeMs: 365 * 24 * 3600_000, maxEntries: 280, maxBytes: 1024 ** 3 } })
    for (let i = 0; i < 256; i++) await commit(h)
    const first = await get(h, '/registry/tile/entries/000')
    expect(first.status).toBe(200)
    expect(parseBundle(first.body)).toHaveLength(256)
    expect((await get(h, '/registry/tile/entries/000')).body).toEqual(first.body)
    const tile = await get(h, '/registry/tile/0/000')
    for (let i = 0; i < 30; i++) await commit(h)
    await h.svc.checkpoint()
    await h.svc.prune()
    expect(logView(h.svc).oldest()).toBe(101)
    for (const path of ['/registry/tile/entries/000', '/registry/tile/entries/000?x=1', '/registry/tile/entries/%30%30%30']) {
      const gone = await get(h, path)
      expect(gone.status).toBe(410)
      expect(JSON.parse(gone.body.toString('utf8'))).toMatchObject({ error: { code: 'Gone', details: { oldest: 101 } } })
    }
    const again = await get(h, '/registry/tile/0/000')
    expect(again.status).toBe(200)
    expect(again.body).toEqual(tile.body)
  })
})

describe('stable across restarts', () => {
  it('bundles, leaves, entry views (and their ETags) and the checkpoint are the same bytes after a restart', async () => {
    const t = await tempDir()
    const keys = signers(3)
    const start = (): Promise<Harness> => harness({ dataDir: t.dir, signers: setOf(keys, 2) })
    try {
      h = await start()
      h.keys.splice(0, 3, ...keys)
      for (let i = 0; i < 3; i++) await commit(h)
      await commit(h, payload(4, big(4)))
      const paths = ['/registry/tile/entries/000.p/4', '/registry/tile/0/000.p/4', '/registry/2', '/registry/4', '/registry/4/leaf', '/registry/checkpoint']
      const before = await Promise.all(paths.map((p) => get(h!, p)))
      const cpBefore = h.svc.signedCheckpoint()
      await h.close()
      h = await start()
      const after = await Promise.all(paths.map((p) => get(h!, p)))
      for (let i = 0; i < paths.length; i++) {
        expect(after[i]!.status, paths[i]).toBe(200)
        expect(after[i]!.body.equals(before[i]!.body), paths[i]).toBe(true)
        expect(after[i]!.headers['etag'], paths[i]).toEqual(before[i]!.headers['etag'])
      }
      // Ed25519 is deterministic: the re-signed checkpoint of the same tree is the same note.
      expect(h.svc.signedCheckpoint()).toBe(cpBefore)
      const again = await get(h, '/registry/2', { 'if-none-match': String(before[2]!.headers['etag']) })
      expect(again.status).toBe(304)
    } finally {
      await t.cleanup()
    }
  })
})

describe('tree hash fixed at genesis', () => {
  it('new logs use SHA-256; asking an existing log for another hash is refused, the default is not', async () => {
    const t = await tempDir()
    const keys = signers(1)
    try {
      const a = await createRegistryService({ dataDir: t.dir, origin: ORIGIN, signers: setOf(keys, 1), treeHash: 'blake3' })
      expect(logView(a).genesis).toMatchObject({ treeHash: 'blake3', leafFormat: 'bundle' })
      await a.close()
      const b = await createRegistryService({ dataDir: t.dir })
      expect(logView(b).genesis.treeHash).toBe('blake3')
      expect(parseCheckpoint(verifyNote(b.signedCheckpoint(), b.logKey).text).extensions).toEqual(['tree-hash blake3'])
      await b.close()
      await expect(createRegistryService({ dataDir: t.dir, treeHash: 'sha256' })).rejects.toSatisfy((e: unknown) => isRonError(e, 'Malformed') || (e as { name?: string }).name === 'ConfigError')
    } finally {
      await t.cleanup()
    }
  })
})
