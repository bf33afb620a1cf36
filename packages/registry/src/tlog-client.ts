/**
 * `verifyTlog(client, {logKey})`: verifies a registry log over its C2SP tiles as a client that
 * trusts nothing but the log's key (what `ron-node registry verify` runs). It
 *
 * 1. verifies the checkpoint's signature by the log key (every line by that key must verify),
 *    and, when asked, at least k valid cosignatures of the given witness keys;
 * 2. reads every hash tile of the tree, rebuilds the tree from the level-0 tiles, and checks
 *    that it hashes to the checkpoint's root and that every higher tile holds the subtree hashes
 *    of the ones below;
 * 3. reads every entry bundle and checks each leaf against its tile hash and by an inclusion
 *    proof, that it is entry `index + 1`, that its `payloadB3` matches its payload (fetched by
 *    address when the leaf carries it by address) and that it links the previous entry;
 * 4. when a previously verified checkpoint is given (a pin), checks that the new tree extends it
 *    by a consistency proof.
 *
 * Bundles of pruned entries (410) are skipped and counted: their hashes stay in the tiles, so
 * the tree and every proof still verify.
 *
 * @module
 */

import { blake3, canonicalBytes, isRonError, toAddress, type JsonValue } from '@ron/core'
import { checkpointTreeHash, parseCheckpoint, parseVerifierKey, verifyNote, type Checkpoint } from './checkpoint.js'
import type { RegistryClient } from './client.js'
import { parseCosignerKey, verifyCosignature, type VerifiedCosignature } from './cosignature.js'
import { payloadB3 } from './descriptors.js'
import { entryHash, type LogEntry } from './entry.js'
import { MerkleTree, treeHasher, verifyConsistency, verifyInclusion, type TreeHashName } from './merkle.js'
import { TILE_HEIGHT, TILE_WIDTH, parseBundle, tilePath, tilesOf } from './tiles.js'

/** Options of {@link verifyTlog}. */
export interface TlogVerifyOptions {
  /** The log's note verifier key (`name+id+base64(0x01 || key)`). */
  logKey: string
  /** Witness cosignature keys (`name+id+base64(0x04 || key)`) whose cosignatures count. @default none */
  witnesses?: readonly string[]
  /** Valid cosignatures needed from `witnesses`. @default all of them */
  witnessQuorum?: number
  /** A checkpoint verified before (a pin): the log must extend it. */
  previous?: { treeSize: number; root: string }
  /** Polls the checkpoint this long for the witness quorum (a fresh commit is cosigned a moment later). @default 5000 */
  waitMs?: number
  signal?: AbortSignal
}

/** The outcome of {@link verifyTlog}. */
export interface TlogVerifyReport {
  origin: string
  treeSize: number
  /** Root hash, base64 (as in the checkpoint). */
  root: string
  treeHash: TreeHashName
  /** The checkpoint verified (with its cosignatures). */
  checkpoint: string
  /** Leaves read from entry bundles and verified. */
  leaves: number
  /** Entries skipped because retention pruned them (their hashes were verified). */
  pruned: number
  /** Tiles and bundles read. */
  tiles: number
  /** Valid cosignatures of the given witnesses. */
  cosignatures: VerifiedCosignature[]
  /** The pinned size the tree was proven to extend. */
  consistentWith?: number
}

/** Thrown when the log does not verify; `message` says what failed. */
export class TlogVerifyError extends Error {
  override readonly name = 'TlogVerifyError'
}

const fail = (msg: string): never => {
  throw new TlogVerifyError(msg)
}

async function checkpointWithQuorum(client: RegistryClient, o: TlogVerifyOptions): Promise<{ note: string; cp: Checkpoint; cosignatures: VerifiedCosignature[] }> {
  const verifier = parseVerifierKey(o.logKey)
  const witnesses = (o.witnesses ?? []).map((k) => parseCosignerKey(k))
  const quorum = o.witnessQuorum ?? witnesses.length
  if (quorum > witnesses.length) fail(`a quorum of ${quorum} needs at least as many witness keys (${witnesses.length} given)`)
  const deadline = Date.now() + (o.waitMs ?? 5000)
  for (;;) {
    const note = await client.checkpoint(o.signal === undefined ? {} : { signal: o.signal })
    let cp: Checkpoint
    try {
      cp = parseCheckpoint(verifyNote(note, verifier).text)
    } catch (e) {
      return fail(`checkpoint: ${e instanceof Error ? e.message : String(e)}`)
    }
    const cosignatures: VerifiedCosignature[] = []
    for (const w of witnesses) {
      try {
        const c = verifyCosignature(note, w)
        if (c !== undefined) cosignatures.push(c)
      } catch (e) {
        return fail(`checkpoint: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    if (cosignatures.length >= quorum) return { note, cp, cosignatures }
    if (Date.now() >= deadline) return fail(`checkpoint of size ${cp.treeSize} carries ${cosignatures.length} valid cosignatures of the ${witnesses.length} witnesses given, ${quorum} needed`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/**
 * Verifies the whole log behind `client` from its tiles.
 * @throws {@link TlogVerifyError} naming the first thing that does not verify
 * @example
 * ```ts
 * const report = await verifyTlog(createRegistryClient(transport), { logKey: 'ron.registry/1a2b3c4d+…' })
 * ```
 */
export async function verifyTlog(client: RegistryClient, o: TlogVerifyOptions): Promise<TlogVerifyReport> {
  const { note, cp, cosignatures } = await checkpointWithQuorum(client, o)
  const opts = o.signal === undefined ? {} : { signal: o.signal }
  let treeHash: TreeHashName
  try {
    treeHash = checkpointTreeHash(cp)
  } catch (e) {
    return fail(`checkpoint: ${e instanceof Error ? e.message : String(e)}`)
  }
  const hasher = treeHasher(treeHash)
  const size = cp.treeSize
  let tiles = 0
  const fetchTile = async (level: number | 'entries', index: number, width: number): Promise<Uint8Array | undefined> => {
    tiles++
    try {
      return await client.tile(tilePath({ level, index, width }), opts)
    } catch (e) {
      if (level === 'entries' && isRonError(e, 'Gone')) return undefined
      throw e
    }
  }
  /** The leaves of bundle `n`; `undefined` when pruned. */
  const readBundle = async (n: number, width: number): Promise<Uint8Array[] | undefined> => {
    let bundle: Uint8Array | undefined
    try {
      bundle = await fetchTile('entries', n, width)
    } catch (e) {
      // A log created before entry bundles may hold a leaf too large for one: read its leaves one by one.
      if (!isRonError(e, 'NotImplemented')) throw e
      const out: Uint8Array[] = []
      for (let v = n * TILE_WIDTH + 1; v <= n * TILE_WIDTH + width; v++) out.push(await client.leaf(v, opts))
      return out
    }
    if (bundle === undefined) return undefined
    try {
      return parseBundle(bundle)
    } catch (e) {
      return fail(`entry bundle ${n}: ${e instanceof Error ? e.message : String(e)}`)
    }
  }

  // The tree, from the level-0 tiles; every higher tile must agree with it.
  const tree = new MerkleTree(hasher)
  const shape = tilesOf(size)
  const level0 = shape[0]
  for (let n = 0; level0 !== undefined && n < level0.full + (level0.partial > 0 ? 1 : 0); n++) {
    const width = n < level0.full ? TILE_WIDTH : level0.partial
    const t = (await fetchTile(0, n, width))!
    if (t.length !== width * 32) fail(`tile 0/${n}: ${t.length} bytes for ${width} hashes`)
    for (let i = 0; i < width; i++) tree.append(t.subarray(i * 32, (i + 1) * 32))
  }
  if (tree.size !== size) fail(`the level-0 tiles hold ${tree.size} leaves, the checkpoint says ${size}`)
  if (Buffer.compare(tree.root(), cp.rootHash) !== 0) fail(`the tiles do not hash to the checkpoint's root`)
  for (const l of shape.slice(1)) {
    for (let n = 0; n < l.full + (l.partial > 0 ? 1 : 0); n++) {
      const width = n < l.full ? TILE_WIDTH : l.partial
      const t = await fetchTile(l.level, n, width)
      const want = tree.subtreeHashes(TILE_HEIGHT * l.level, n * TILE_WIDTH, width)
      if (t === undefined || want === undefined || Buffer.compare(t, want) !== 0) fail(`tile ${l.level}/${n} does not hold the hashes of the tiles below it`)
    }
  }

  // Every leaf: its hash, its inclusion proof, the entry it is and the chain.
  let leaves = 0
  let pruned = 0
  let prev: string | undefined
  const root = tree.root()
  for (let n = 0; n * TILE_WIDTH < size; n++) {
    const width = Math.min(TILE_WIDTH, size - n * TILE_WIDTH)
    const items = await readBundle(n, width)
    if (items === undefined) {
      pruned += width
      prev = undefined
      continue
    }
    if (items.length !== width) fail(`entry bundle ${n} holds ${items.length} leaves, not ${width}`)
    for (let j = 0; j < width; j++) {
      const index = n * TILE_WIDTH + j
      const leaf = items[j]!
      const h = hasher.leaf(leaf)
      if (Buffer.compare(h, tree.leafHash(index)) !== 0) fail(`leaf ${index} does not hash to its tile entry`)
      if (!verifyInclusion(hasher, index, size, h, tree.inclusionProof(index, size), root)) fail(`leaf ${index}: inclusion proof does not verify`)
      let entry: Record<string, JsonValue>
      try {
        entry = JSON.parse(Buffer.from(leaf).toString('utf8')) as Record<string, JsonValue>
      } catch {
        return fail(`leaf ${index} is not JSON`)
      }
      const e = entry as unknown as LogEntry
      if (e.version !== index + 1) fail(`leaf ${index} is entry version ${String(e.version)}, not ${index + 1}`)
      let full: Uint8Array = leaf
      if (e.payload === undefined) {
        // The payload rides by address: fetch it and check it against payloadB3.
        let bytes: Uint8Array
        try {
          bytes = await client.payload(e.payloadB3, opts)
        } catch (err) {
          // Pruned since its bundle was read: its leaf verified; the chain restarts after it.
          if (!isRonError(err, 'Gone')) throw err
          pruned++
          prev = undefined
          continue
        }
        if (toAddress(blake3(bytes)) !== e.payloadB3) fail(`the payload of version ${e.version} does not match its payloadB3`)
        full = canonicalBytes({ ...entry, payload: JSON.parse(Buffer.from(bytes).toString('utf8')) as JsonValue })
      } else if (payloadB3(e.payload) !== e.payloadB3) {
        fail(`version ${e.version}: payloadB3 does not match the payload`)
      }
      if (prev !== undefined && e.prev !== prev) fail(`version ${e.version} does not link version ${e.version - 1}`)
      prev = entryHash(full)
      leaves++
    }
  }

  const report: TlogVerifyReport = {
    origin: cp.origin,
    treeSize: size,
    root: Buffer.from(cp.rootHash).toString('base64'),
    treeHash,
    checkpoint: note,
    leaves,
    pruned,
    tiles,
    cosignatures,
  }
  const p = o.previous
  if (p !== undefined) {
    if (p.treeSize > size) fail(`the log shrank: it was verified at size ${p.treeSize}, its checkpoint now says ${size}`)
    const proof = tree.consistencyProof(p.treeSize, size)
    if (!verifyConsistency(hasher, p.treeSize, size, proof, Buffer.from(p.root, 'base64'), root)) fail(`the tree of size ${size} does not extend the one verified before (size ${p.treeSize})`)
    report.consistentWith = p.treeSize
  }
  return report
}
