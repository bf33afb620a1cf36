import { describe, expect, it } from 'vitest'
import { MalformedError, generateIssuerKey, isNodeId, nameWithinPrefix, newNodeId, nodeIdentityFromKey, normalizeEndpoint, staticNodeDirectory, verifyNodeSignature } from '../../src/index.js'

describe('node identity', () => {
  it('node ids have one form that no service name can take', () => {
    for (let i = 0; i < 20; i++) expect(isNodeId(newNodeId())).toBe(true)
    for (const bad of ['passport', 'storage', 'n0123', 'N0123456789abcdef', 'n0123456789abcdeg', 'n0123456789abcdef0', '', 5]) expect(isNodeId(bad)).toBe(false)
  })

  it('signs with the node key and verifies only under that key and those bytes', () => {
    const id = newNodeId()
    const me = nodeIdentityFromKey(id, generateIssuerKey())
    const other = nodeIdentityFromKey(newNodeId(), generateIssuerKey())
    const data = new TextEncoder().encode('ron:name:v1\n{}')
    const sig = me.sign(data)
    expect(sig).toHaveLength(64)
    expect(verifyNodeSignature(me.publicKey, data, sig)).toBe(true)
    expect(verifyNodeSignature(other.publicKey, data, sig)).toBe(false)
    const flipped = Uint8Array.from(data)
    flipped[0] = flipped[0]! ^ 1
    expect(verifyNodeSignature(me.publicKey, flipped, sig)).toBe(false)
    expect(verifyNodeSignature('not-a-key', data, sig)).toBe(false)
    // The identity point (a small-order key) would verify forged signatures: refused.
    expect(verifyNodeSignature(Buffer.from([1, ...new Array<number>(31).fill(0)]).toString('base64url'), data, new Uint8Array(64))).toBe(false)
    expect(() => nodeIdentityFromKey('passport', generateIssuerKey())).toThrow(MalformedError)
  })

  it('a static directory finds nodes by id and by advertised http(s) endpoint only', () => {
    const a = { id: newNodeId(), nodeKey: 'a', services: { storage: 'http://127.0.0.1:7701/', index: 'http://127.0.0.1:7704' } }
    const b = { id: newNodeId(), nodeKey: 'b', services: { storage: 'https://b.example:7701' } }
    const dir = staticNodeDirectory([a, b])
    expect(dir.selfId).toBe(a.id)
    expect(dir.get(b.id)).toBe(b)
    expect(dir.get('passport')).toBeUndefined()
    expect(dir.byEndpoint('http://127.0.0.1:7701')).toBe(a)
    expect(dir.byEndpoint('https://b.example:7701/')).toBe(b)
    expect(dir.byEndpoint('http://127.0.0.1:7702')).toBeUndefined()
    expect(dir.byEndpoint('javascript:alert(1)')).toBeUndefined()
    expect(dir.byEndpoint('storage')).toBeUndefined()
    expect(dir.list()).toEqual([a, b])
    expect(normalizeEndpoint('http://user:pw@h/')).toBeUndefined()
    expect(() => staticNodeDirectory([])).toThrow(MalformedError)
  })

  it('namePrefix allows the name and the names under it, nothing else', () => {
    expect(nameWithinPrefix('docs.alice', 'docs.alice')).toBe(true)
    expect(nameWithinPrefix('blog.docs.alice', 'docs.alice')).toBe(true)
    expect(nameWithinPrefix('xdocs.alice', 'docs.alice')).toBe(false)
    expect(nameWithinPrefix('alice', 'docs.alice')).toBe(false)
    expect(nameWithinPrefix('docs.alice.evil', 'docs.alice')).toBe(false)
    expect(nameWithinPrefix('x', '')).toBe(false)
  })
})
