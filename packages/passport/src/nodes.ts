/**
 * Service identity (SPEC.md section 5): enrolled node keys, and the check of a node's client
 * assertion (a one-minute JWT signed with its node key, as OAuth's `private_key_jwt`) before
 * passport trades it for a short-lived service token. Each assertion is accepted once.
 *
 * @module
 */

import { verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { UnauthorizedError, publicKeyFromJwk, MalformedError, type Clock, type Jwk } from '@ron/core'
import type { PassportClusterStore } from './cluster-store.js'
import { writeFileAtomic } from './file-keystore.js'

/** An enrolled node. */
export interface EnrolledNode {
  /** The node id (`sub` of its service tokens is `node:<nodeId>`). */
  nodeId: string
  /** Its Ed25519 public key. */
  publicJwk: Jwk
  /** Scopes its service tokens may carry. */
  scopes: string[]
  /** Audiences its service tokens may name (`*` = any). */
  audiences: string[]
  /** When it was enrolled (Unix ms). */
  enrolledAt: number
}

/** Longest life of an assertion, seconds (one minute plus slack for the clock tolerance). */
const MAX_ASSERTION_LIFE_SEC = 60

const reject = (reason: string, message: string): UnauthorizedError => new UnauthorizedError(message, { details: { reason } })

function segment(s: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as unknown
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** Enrolled nodes and seen assertions. @internal */
export class NodeRegistry {
  readonly #nodes = new Map<string, { node: EnrolledNode; key: KeyObject }>()
  readonly #seen = new Map<string, number>() // assertion jti → exp (s)
  readonly #clock: Clock
  readonly #dir: string | undefined
  /** Writes of nodes.json, one at a time, each with the state at its start (the last one has everything). */
  #writes: Promise<void> = Promise.resolve()

  readonly #writeFile: ((path: string, text: string) => Promise<void>) | undefined
  readonly #cluster: PassportClusterStore | undefined

  private constructor(clock: Clock, dir: string | undefined, writeFile?: (path: string, text: string) => Promise<void>, cluster?: PassportClusterStore) {
    this.#clock = clock
    this.#dir = dir
    this.#writeFile = writeFile
    this.#cluster = cluster
  }

  /**
   * Loads `nodes.json` from `dir` (none: memory only). `writeFile` writes it durably (disk faults
   * mapped by the caller). @default writeFileAtomic
   */
  static async open(clock: Clock, dir: string | undefined, writeFile?: (path: string, text: string) => Promise<void>, cluster?: { store: PassportClusterStore; nodes: readonly EnrolledNode[] }): Promise<NodeRegistry> {
    if (cluster !== undefined) {
      // A cluster's enrolments live in its store (SPEC §6c): every node serves every enrolment.
      const r = new NodeRegistry(clock, undefined, undefined, cluster.store)
      for (const n of cluster.nodes) r.adopt(n)
      return r
    }
    const r = new NodeRegistry(clock, dir, writeFile)
    if (dir === undefined) return r
    let text: string | undefined
    try {
      text = await readFile(join(dir, 'nodes.json'), 'utf8')
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    }
    if (text !== undefined) for (const n of (JSON.parse(text) as { nodes: EnrolledNode[] }).nodes) r.#put(n)
    return r
  }

  /** Every enrolled node. */
  list(): EnrolledNode[] {
    return [...this.#nodes.values()].map((x) => x.node)
  }

  /**
   * Enrols (or re-enrols) a node key.
   * @throws {@link MalformedError} when the key is not an Ed25519 public JWK
   */
  async enrol(node: Omit<EnrolledNode, 'enrolledAt' | 'publicJwk'> & { publicJwk: { x: string } }): Promise<EnrolledNode> {
    const full: EnrolledNode = { ...node, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: node.publicJwk.x }, enrolledAt: this.#clock.now() }
    const key = NodeRegistry.#keyOf(full)
    const dir = this.#dir
    if (this.#cluster !== undefined) {
      await this.#cluster.enrol(full)
      this.#nodes.set(full.nodeId, { node: full, key })
    } else if (dir !== undefined) {
      // On disk first: an enrolment that is not durable is not answered, and not in force either.
      const write = async (): Promise<void> => {
        const nodes = [...this.list().filter((n) => n.nodeId !== full.nodeId), full]
        const path = join(dir, 'nodes.json')
        const text = `${JSON.stringify({ nodes }, null, 2)}\n`
        await (this.#writeFile === undefined ? writeFileAtomic(path, text, dir) : this.#writeFile(path, text))
        this.#nodes.set(full.nodeId, { node: full, key })
      }
      const run = this.#writes.then(write, write)
      this.#writes = run.catch(() => undefined)
      await run
    } else {
      this.#nodes.set(full.nodeId, { node: full, key })
    }
    return full
  }

  /**
   * Checks a client assertion: EdDSA, `iss` = `sub` = `node:<id>` of an enrolled node, signed by
   * its key, `aud` naming passport, at most a minute long, not expired (with tolerance), not seen before.
   * @throws {@link UnauthorizedError} with a `details.reason` of the verifier's vocabulary
   */
  check(assertion: string, audience: readonly string[], toleranceSec: number): EnrolledNode {
    const parts = assertion.split('.')
    if (parts.length !== 3) throw reject('malformed', 'assertion must be a compact JWS')
    const [h, p, s] = parts as [string, string, string]
    const header = segment(h)
    const claims = segment(p)
    if (header === undefined || claims === undefined) throw reject('malformed', 'assertion header or claims are not JSON objects')
    if (header['alg'] !== 'EdDSA') throw reject('bad_alg', 'assertion alg must be EdDSA')
    if (header['crit'] !== undefined) throw reject('malformed', 'assertion header crit is not supported')
    const sub = claims['sub']
    if (typeof sub !== 'string' || !sub.startsWith('node:') || claims['iss'] !== sub) throw reject('malformed', 'assertion iss and sub must both be node:<id>')
    const entry = this.#nodes.get(sub.slice('node:'.length))
    if (entry === undefined) throw reject('unknown_kid', 'node is not enrolled')
    const sig = Buffer.from(s, 'base64url')
    if (sig.length !== 64 || sig.toString('base64url') !== s || !cryptoVerify(null, Buffer.from(`${h}.${p}`, 'latin1'), entry.key, sig)) {
      throw reject('bad_signature', 'assertion signature does not verify with the enrolled node key')
    }
    const { iat, exp, jti } = claims
    if (typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string' || jti.length === 0) throw reject('malformed', 'assertion needs iat, exp and jti')
    const now = this.#clock.now() / 1000
    if (exp - iat > MAX_ASSERTION_LIFE_SEC) throw reject('malformed', 'assertion lives longer than a minute')
    if (now > exp + toleranceSec) throw reject('expired', 'assertion expired')
    if (now + toleranceSec < iat) throw reject('not_yet_valid', 'assertion issued in the future')
    const aud = claims['aud']
    const auds = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : []
    if (!auds.some((a) => audience.includes(a as string))) throw reject('wrong_audience', 'assertion is not for this passport')
    this.#forget(now, toleranceSec)
    if (this.#seen.has(jti)) throw reject('revoked', 'assertion already used')
    this.#seen.set(jti, exp)
    return entry.node
  }

  /** Takes in an enrolment stored by another node of the cluster (a malformed key is ignored). */
  adopt(n: EnrolledNode): void {
    try {
      this.#put(n)
    } catch {
      // Not an Ed25519 key: never written by a passport; nothing to enrol.
    }
  }

  #forget(now: number, toleranceSec: number): void {
    if (this.#seen.size < 1024) return
    for (const [jti, exp] of this.#seen) if (exp + toleranceSec < now) this.#seen.delete(jti)
  }

  #put(n: EnrolledNode): void {
    this.#nodes.set(n.nodeId, { node: n, key: NodeRegistry.#keyOf(n) })
  }

  static #keyOf(n: EnrolledNode): KeyObject {
    const key = publicKeyFromJwk(n.publicJwk)
    if (key === undefined) throw new MalformedError('publicJwk must be an Ed25519 public key', { details: { field: 'publicJwk' } })
    return key
  }
}
