/**
 * Node identity and the directory of known nodes (SPEC.md §5 "Service identity" and "Peers").
 *
 * A node id has one form, `n` + 16 lowercase hex digits, so it can never be mistaken for a service
 * name. A node signs what it vouches for (signed name records, client assertions) with its
 * Ed25519 node key. Services never look a peer up by anything a peer reports about itself: they are
 * handed a {@link NodeDirectory} that holds only nodes whose keys were pinned by the host.
 *
 * @module
 */

import { createPublicKey, randomBytes, sign as edSign, type KeyObject } from 'node:crypto'
import { MalformedError } from '../errors.js'
import { isStrongEd25519Key } from './ed25519-key.js'
import type { IssuerKey } from './issuer-key.js'
import { ed25519Verify } from './verifier.js'

/** The one form of a node id: `n` + 16 lowercase hex digits. */
export const NODE_ID_PATTERN = /^n[0-9a-f]{16}$/

/** True when `s` is a node id (`n` + 16 lowercase hex digits). */
export function isNodeId(s: unknown): s is string {
  return typeof s === 'string' && NODE_ID_PATTERN.test(s)
}

/**
 * A new random node id (64 bits).
 * @example
 * ```ts
 * newNodeId() // 'n3f9c0a1b2c3d4e5f'
 * ```
 */
export function newNodeId(): string {
  return `n${randomBytes(8).toString('hex')}`
}

/** This node as the services see it: its id, its public node key, and a signer with its private key. */
export interface NodeIdentity {
  /** `n` + 16 hex. */
  readonly id: string
  /** Public node key: raw 32-byte Ed25519 key, base64url (`/status`'s `nodeKey`). */
  readonly publicKey: string
  /** Ed25519 signature (64 bytes) by the node key over `data`. */
  sign(data: Uint8Array): Uint8Array
}

/**
 * A {@link NodeIdentity} backed by an Ed25519 key (the node key of the data directory, or an
 * ephemeral one for amnesia).
 * @throws {@link MalformedError} when `id` is not a node id.
 */
export function nodeIdentityFromKey(id: string, key: Pick<IssuerKey, 'privateKey' | 'publicJwk'>): NodeIdentity {
  if (!isNodeId(id)) throw new MalformedError(`not a node id: ${String(id)}`, { details: { field: 'nodeId' } })
  const privateKey = key.privateKey
  return Object.freeze({
    id,
    publicKey: key.publicJwk.x,
    sign: (data: Uint8Array) => new Uint8Array(edSign(null, data, privateKey)),
  })
}

const keyCache = new Map<string, KeyObject | null>()

/** The KeyObject of a base64url raw Ed25519 public key; undefined when it is not a strong key. */
export function nodePublicKey(publicKey: string): KeyObject | undefined {
  let k = keyCache.get(publicKey)
  if (k === undefined) {
    k = null
    if (/^[A-Za-z0-9_-]{43}$/.test(publicKey) && isStrongEd25519Key(Buffer.from(publicKey, 'base64url'))) {
      try {
        k = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' })
      } catch {
        k = null
      }
    }
    if (keyCache.size >= 1024) keyCache.clear()
    keyCache.set(publicKey, k)
  }
  return k ?? undefined
}

/** True when `sig` is a valid Ed25519 signature over `data` by the node key `publicKey` (base64url). */
export function verifyNodeSignature(publicKey: string, data: Uint8Array, sig: Uint8Array): boolean {
  const key = nodePublicKey(publicKey)
  return key !== undefined && ed25519Verify(key, data, sig)
}

/** A node this node knows: itself, or a peer whose key it pinned (or the shared passport enrolled). */
export interface KnownNode {
  /** `n` + 16 hex. */
  readonly id: string
  /** Pinned public node key, base64url. */
  readonly nodeKey: string
  /** The node's admin URL, when known. */
  readonly admin?: string
  /** Service name → the URL the node advertises for it (`/status`'s `services`). */
  readonly services: Readonly<Record<string, string>>
}

/**
 * The nodes a service may believe (SPEC.md §5 "Peers"): this node and the peers the host pinned.
 * Index checks announcements and signed name records against it; readers fetch only from the
 * endpoints it lists. Implemented by ron-node's peer directory; {@link staticNodeDirectory} for
 * embedders and tests.
 */
export interface NodeDirectory {
  /** This node's id. */
  readonly selfId: string
  /** A known node by id (this node included), or undefined. */
  get(id: string): KnownNode | undefined
  /**
   * The known node that advertises `url` as one of its service URLs (compared without a trailing
   * slash), or undefined. Only `http:`/`https:` URLs ever match.
   */
  byEndpoint(url: string): KnownNode | undefined
  /** Every known node, this node first. */
  list(): readonly KnownNode[]
}

/** `url` without trailing slashes, or undefined when it is not an absolute http(s) URL. */
export function normalizeEndpoint(url: string): string | undefined {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return undefined
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined
  if (u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '') return undefined
  return u.href.replace(/\/+$/, '')
}

/**
 * A fixed {@link NodeDirectory}: `nodes[0]` is this node.
 * @throws {@link MalformedError} for an empty list or a bad node id.
 * @example
 * ```ts
 * const dir = staticNodeDirectory([{ id: me.id, nodeKey: me.publicKey, services: { storage: 'http://127.0.0.1:7701' } }])
 * ```
 */
export function staticNodeDirectory(nodes: readonly KnownNode[]): NodeDirectory {
  const first = nodes[0]
  if (first === undefined) throw new MalformedError('a node directory needs at least this node', { details: { field: 'nodes' } })
  const byId = new Map<string, KnownNode>()
  const byUrl = new Map<string, KnownNode>()
  for (const n of nodes) {
    if (!isNodeId(n.id)) throw new MalformedError(`not a node id: ${String(n.id)}`, { details: { field: 'nodes.id' } })
    byId.set(n.id, n)
    for (const url of Object.values(n.services)) {
      const e = normalizeEndpoint(url)
      if (e !== undefined) byUrl.set(e, n)
    }
  }
  const list = Object.freeze([...nodes])
  return {
    selfId: first.id,
    get: (id) => byId.get(id),
    byEndpoint: (url) => {
      const e = normalizeEndpoint(url)
      return e === undefined ? undefined : byUrl.get(e)
    },
    list: () => list,
  }
}
