import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  MerkleTree,
  blake3TreeHasher,
  rootFromInclusionProof,
  sha256TreeHasher,
  verifyConsistency,
  verifyInclusion,
  type TreeHasher,
} from '../src/merkle.js'
import { LeafIndex } from '../src/leaf-index.js'

interface Vectors {
  leaves: string[]
  roots: string[]
  emptyTreeHash: string
  someHash: string
  inclusion: { leaf: number; size: number; proof: string[] }[]
  consistency: { size1: number; size2: number; proof: string[] }[]
  testdata: Array<Record<string, unknown>>
}
const V = JSON.parse(readFileSync(new URL('./vectors/rfc6962-sha256.json', import.meta.url), 'utf8')) as Vectors
const hex = (s: string): Uint8Array => Buffer.from(s, 'hex')
const b64 = (s: string): Uint8Array => Buffer.from(s, 'base64')
const H = sha256TreeHasher

function sha256Tree(n: number): MerkleTree {
  const t = new MerkleTree(H)
  for (const l of V.leaves.slice(0, n)) t.appendData(hex(l))
  return t
}

/** Every corruption the reference test suite (transparency-dev/merkle) applies to an inclusion proof. */
function inclusionProbes(index: number, size: number, proof: Uint8Array[], root: Uint8Array, leaf: Uint8Array): Array<[string, number, number, Uint8Array, Uint8Array[], Uint8Array]> {
  const some = hex(V.someHash)
  const out: Array<[string, number, number, Uint8Array, Uint8Array[], Uint8Array]> = [
    ['index - 1', index - 1, size, leaf, proof, root],
    ['index + 1', index + 1, size, leaf, proof, root],
    ['index ^ 2', index ^ 2, size, leaf, proof, root],
    ['size * 2', index, size * 2, leaf, proof, root],
    ['size / 2', index, Math.floor(size / 2), leaf, proof, root],
    ['wrong leaf', index, size, new TextEncoder().encode('WrongLeaf'), proof, root],
    ['empty root', index, size, leaf, proof, hex(V.emptyTreeHash)],
    ['random root', index, size, leaf, proof, some],
    ['trailing garbage', index, size, leaf, [...proof, new Uint8Array(0)], root],
    ['trailing root', index, size, leaf, [...proof, root], root],
    ['preceding garbage', index, size, leaf, [new Uint8Array(0), ...proof], root],
    ['preceding root', index, size, leaf, [root, ...proof], root],
  ]
  proof.forEach((_, i) => {
    const p = proof.map((x) => Uint8Array.from(x))
    p[i]![0]! ^= 8
    out.push([`modified proof[${i}]`, index, size, leaf, p, root])
  })
  if (proof.length > 0) out.push(['removed component', index, size, leaf, proof.slice(0, -1), root])
  if (proof.length > 1) out.push(['inserted component', index, size, leaf, [proof[0]!, some, ...proof.slice(1)], root])
  return out
}

describe('RFC 6962 vectors (SHA-256)', () => {
  it('computes the published roots of sizes 1..8 and the empty tree', () => {
    expect(Buffer.from(new MerkleTree(H).root()).toString('hex')).toBe(V.emptyTreeHash)
    const t = sha256Tree(8)
    V.roots.forEach((r, i) => expect(Buffer.from(t.root(i + 1)).toString('hex')).toBe(r))
  })

  it('generates and verifies the published inclusion proofs, and rejects every mutation', () => {
    const t = sha256Tree(8)
    for (const v of V.inclusion) {
      const index = v.leaf - 1
      const proof = v.proof.map(hex)
      expect(t.inclusionProof(index, v.size).map((p) => Buffer.from(p).toString('hex'))).toEqual(v.proof)
      const root = hex(V.roots[v.size - 1]!)
      const leaf = H.leaf(hex(V.leaves[index]!))
      expect(verifyInclusion(H, index, v.size, leaf, proof, root)).toBe(true)
      expect(rootFromInclusionProof(H, index, v.size, leaf, proof)).toEqual(root)
      for (const [desc, i, s, l, p, r] of inclusionProbes(index, v.size, proof, root, leaf)) {
        expect(verifyInclusion(H, i, s, l, p, r), desc).toBe(false)
      }
    }
  })

  it('generates and verifies the published consistency proofs, and rejects every mutation', () => {
    const t = sha256Tree(8)
    for (const v of V.consistency) {
      const proof = v.proof.map(hex)
      expect(t.consistencyProof(v.size1, v.size2).map((p) => Buffer.from(p).toString('hex'))).toEqual(v.proof)
      const r1 = hex(V.roots[v.size1 - 1]!)
      const r2 = hex(V.roots[v.size2 - 1]!)
      expect(verifyConsistency(H, v.size1, v.size2, proof, r1, r2)).toBe(true)
      if (proof.length === 0) continue
      const probes: Array<[string, number, number, Uint8Array[], Uint8Array, Uint8Array]> = [
        ['size1 - 1', v.size1 - 1, v.size2, proof, r1, r2],
        ['size1 + 1', v.size1 + 1, v.size2, proof, r1, r2],
        ['size1 ^ 2', v.size1 ^ 2, v.size2, proof, r1, r2],
        ['size2 * 2', v.size1, v.size2 * 2, proof, r1, r2],
        ['size2 / 2', v.size1, Math.floor(v.size2 / 2), proof, r1, r2],
        ['wrong root1', v.size1, v.size2, proof, new TextEncoder().encode('WrongRoot'), r2],
        ['wrong root2', v.size1, v.size2, proof, r1, new TextEncoder().encode('WrongRoot')],
        ['swapped roots', v.size1, v.size2, proof, r2, r1],
        ['empty proof', v.size1, v.size2, [], r1, r2],
        ['trailing garbage', v.size1, v.size2, [...proof, new Uint8Array(0)], r1, r2],
        ['trailing root1', v.size1, v.size2, [...proof, r1], r1, r2],
        ['trailing root2', v.size1, v.size2, [...proof, r2], r1, r2],
        ['preceding garbage', v.size1, v.size2, [new Uint8Array(0), ...proof], r1, r2],
        ['preceding root1', v.size1, v.size2, [r1, ...proof], r1, r2],
        ['preceding root2', v.size1, v.size2, [r2, ...proof], r1, r2],
        ['preceding proof[0]', v.size1, v.size2, [proof[0]!, ...proof], r1, r2],
        ['truncated proof', v.size1, v.size2, proof.slice(0, -1), r1, r2],
      ]
      proof.forEach((_, i) => {
        const p = proof.map((x) => Uint8Array.from(x))
        p[i]![0]! ^= 16
        probes.push([`modified proof[${i}]`, v.size1, v.size2, p, r1, r2])
      })
      for (const [desc, s1, s2, p, a, b] of probes) expect(verifyConsistency(H, s1, s2, p, a, b), `${v.size1}→${v.size2} ${desc}`).toBe(false)
    }
  })

  it('agrees with the reference testdata files (base64)', () => {
    for (const d of V.testdata) {
      const proof = (d['proof'] as string[]).map(b64)
      const ok =
        d['kind'] === 'inclusion'
          ? verifyInclusion(H, d['leafIdx'] as number, d['treeSize'] as number, b64(d['leafHash'] as string), proof, b64(d['root'] as string))
          : verifyConsistency(H, d['size1'] as number, d['size2'] as number, proof, b64(d['root1'] as string), b64(d['root2'] as string))
      expect(ok, d['desc'] as string).toBe(!(d['wantErr'] as boolean))
    }
  })

  it('handles the edge cases of the reference suite', () => {
    const some = hex(V.someHash)
    const empty = hex(V.emptyTreeHash)
    for (const [i, s] of [[0, 0], [0, 1], [1, 0], [2, 1]] as const) {
      expect(verifyInclusion(H, i, s, some, [], new Uint8Array(0))).toBe(false)
      expect(verifyInclusion(H, i, s, new Uint8Array(0), [], empty)).toBe(false)
      expect(verifyInclusion(H, i, s, some, [], empty)).toBe(false)
    }
    const a = new TextEncoder().encode("don't care 1")
    const b = new TextEncoder().encode("don't care 2")
    expect(verifyConsistency(H, 0, 0, [], a, b)).toBe(false)
    expect(verifyConsistency(H, 1, 1, [], a, b)).toBe(false)
    expect(verifyConsistency(H, 0, 0, [], a, a)).toBe(true)
    expect(verifyConsistency(H, 0, 1, [], a, b)).toBe(true)
    expect(verifyConsistency(H, 1, 0, [], a, b)).toBe(false)
    expect(verifyConsistency(H, 2, 1, [], a, b)).toBe(false)
    expect(verifyConsistency(H, 1, 2, [], a, b)).toBe(false)
    expect(verifyConsistency(H, 0, 0, [empty], empty, empty)).toBe(false)
    expect(verifyConsistency(H, 1, 1, [empty], empty, empty)).toBe(false)
  })
})

/** The textbook recursive definition of MTH, to check the cached tree against. */
function naiveRoot(h: TreeHasher, leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return h.emptyRoot
  if (leaves.length === 1) return h.leaf(leaves[0]!)
  let k = 1
  while (k * 2 < leaves.length) k *= 2
  return h.node(naiveRoot(h, leaves.slice(0, k)), naiveRoot(h, leaves.slice(k)))
}

describe('BLAKE3 trees round trip', () => {
  const data = (i: number): Uint8Array => new TextEncoder().encode(`entry-${i}`)

  it('roots match the recursive definition; every inclusion and consistency proof verifies up to 33 leaves', () => {
    const t = new MerkleTree(blake3TreeHasher)
    const leaves: Uint8Array[] = []
    for (let n = 1; n <= 33; n++) {
      leaves.push(data(n))
      t.appendData(data(n))
      expect(t.root()).toEqual(naiveRoot(blake3TreeHasher, leaves))
    }
    for (let size = 1; size <= 33; size++) {
      const root = t.root(size)
      for (let i = 0; i < size; i++) {
        const proof = t.inclusionProof(i, size)
        expect(verifyInclusion(blake3TreeHasher, i, size, t.leafHash(i), proof, root)).toBe(true)
        expect(verifyInclusion(blake3TreeHasher, i, size, t.leafHash((i + 1) % 33), proof, root)).toBe(false)
      }
      for (let from = 0; from <= size; from++) {
        const proof = t.consistencyProof(from, size)
        expect(verifyConsistency(blake3TreeHasher, from, size, proof, t.root(from), root)).toBe(true)
      }
    }
  })

  it('rejects any single flipped bit in a proof (property)', () => {
    const t = new MerkleTree(blake3TreeHasher)
    for (let n = 0; n < 100; n++) t.appendData(data(n))
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 100 }), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 }), (size, a, b, bit) => {
        const i = a % size
        const proof = t.inclusionProof(i, size)
        if (proof.length > 0) {
          const p = proof.map((x) => Uint8Array.from(x))
          const j = b % p.length
          p[j]![bit % 32]! ^= 1 << bit % 8
          expect(verifyInclusion(blake3TreeHasher, i, size, t.leafHash(i), p, t.root(size))).toBe(false)
        }
        const from = 1 + (b % (size - 1))
        const cp = t.consistencyProof(from, size).map((x) => Uint8Array.from(x))
        cp[a % cp.length]![bit % 32]! ^= 1 << bit % 8
        expect(verifyConsistency(blake3TreeHasher, from, size, cp, t.root(from), t.root(size))).toBe(false)
      }),
      { seed: 6962, numRuns: 300 },
    )
  })

  it('truncate forgets a torn tail', () => {
    const t = new MerkleTree()
    for (let n = 0; n < 10; n++) t.appendData(data(n))
    const r7 = t.root(7)
    t.truncate(7)
    expect(t.size).toBe(7)
    expect(t.root()).toEqual(r7)
    t.appendData(data(7))
    const u = new MerkleTree()
    for (let n = 0; n < 8; n++) u.appendData(data(n))
    expect(t.root()).toEqual(u.root())
  })
})

describe('LeafIndex (get-proof-by-hash)', () => {
  it('finds every leaf across growths, tells apart hashes with the same 4-byte key, and misses unknown ones', () => {
    const hashes: Buffer[] = []
    const index = new LeafIndex((i) => hashes[i]!)
    for (let i = 0; i < 3000; i++) {
      const h = createHash('sha256').update(`leaf ${i}`).digest()
      // Every tenth leaf shares its key (first 4 bytes) with the one before it.
      if (i % 10 === 9) hashes[i - 1]!.copy(h, 0, 0, 4)
      hashes.push(h)
      index.add(i, h)
    }
    expect(index.size).toBe(3000)
    for (let i = 0; i < 3000; i++) expect(index.find(hashes[i]!)).toBe(i)
    const unknown = Buffer.from(hashes[8]!)
    unknown[31]! ^= 1
    expect(index.find(unknown)).toBeUndefined()
    expect(index.find(new Uint8Array(31))).toBeUndefined()
  })
})
