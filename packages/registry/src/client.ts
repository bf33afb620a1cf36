/**
 * The typed client of the registry HTTP API, over any {@link Transport}. Every method throws the
 * typed error of the response envelope (`QuorumNotMetError`, `ChainMismatchError`, `GoneError`…).
 *
 * @module
 */

import { resolveToken, sseEvents, throwIfError } from '@ron/core'
import type { Address, TokenSource, Transport, TransportResponse } from '@ron/core'
import type { ApprovalResult, CommitResult, ProposalView, RegistryUpdated } from './committer.js'
import type { Descriptor, DescriptorSet, SignerSet } from './descriptors.js'
import type { LogEntry } from './entry.js'
import type { SupersededBy } from './log.js'
import { UPDATED_EVENT } from './publisher.js'
import { DEADLINE_HEADER } from './routes/writes.js'
import { signApproval, type Approval, type SignerKey } from './signers.js'

/** Options of {@link createRegistryClient}. */
export interface RegistryClientOptions {
  /** Transport target of the registry. @default 'registry' */
  target?: string
  /** Bearer token (or a function giving one) for the write routes. @default none */
  token?: TokenSource
  /** Per-call deadline; also sent to the commit as `X-Deadline-Ms`. @default the transport's */
  timeoutMs?: number
}

/** Per-call options. */
export interface RegistryCallOptions {
  signal?: AbortSignal
  timeoutMs?: number
}

/** `202` answer to a proposal. */
export interface ProposeResult {
  proposalId: string
  payloadB3: Address
  baseVersion: number
  expiresAt: number
}

/** `GET /registry/head`. */
export interface HeadView {
  version: number
  hash: Address
  payloadB3: Address | null
  committedAt: number | null
  treeSize: number
  root: string
  treeHash: 'blake3' | 'sha256'
  origin: string
  /** The log's note verifier key (Go's `note` form): what clients pin. */
  logKey: string
  /** This node's witness verifier key (for logs that list it as a witness). */
  witnessKey?: string
  oldest: number
  signers: SignerSet
}

/** `GET /registry/:version`: the entry, its hash, its leaf (index, hash, and where its exact bytes are). */
export type EntryView = LogEntry & { hash: Address; leafIndex: number; leafHash: string; leaf: string; supersededBy?: SupersededBy }

/** `GET /registry/proof/inclusion`. */
export interface InclusionProofView {
  version: number
  leafIndex: number
  treeSize: number
  treeHash: 'blake3' | 'sha256'
  leafHash: string
  proof: string[]
  root: string
}

/** `GET /registry/proof/consistency`. */
export interface ConsistencyProofView {
  from: number
  to: number
  treeHash: 'blake3' | 'sha256'
  proof: string[]
  fromRoot: string
  toRoot: string
}

/** The registry client. */
export interface RegistryClient {
  /** Proposes a descriptor set (needs `registry:propose`). */
  propose(payload: DescriptorSet, opts?: RegistryCallOptions & { baseVersion?: number }): Promise<ProposeResult>
  /** Sends an approval (needs `registry:approve`). */
  approve(proposalId: string, approval: Approval, opts?: RegistryCallOptions): Promise<ApprovalResult>
  /** Signs the proposal with `key` (fetching origin and base) and sends the approval. */
  approveWith(proposalId: string, key: SignerKey, opts?: RegistryCallOptions): Promise<ApprovalResult>
  /**
   * Commits a proposal with quorum (needs `registry:commit`); a retry returns the same entry.
   * With `approvals`, they are recorded first in the same request (the token then needs
   * `registry:approve` too): propose → commit-with-approvals is two round trips instead of 2 + M.
   */
  commit(proposalId: string, opts?: RegistryCallOptions & { approvals?: Approval[] }): Promise<CommitResult>
  /** Proposes a supersede record for `version` (needs `registry:admin`); approve and commit it like any proposal. */
  supersede(version: number, reason: string, opts?: RegistryCallOptions & { items?: Descriptor[] }): Promise<ProposeResult>
  /** A proposal and its approvals. */
  proposal(proposalId: string, opts?: RegistryCallOptions): Promise<ProposalView>
  /** HEAD and the log's identity. */
  head(opts?: RegistryCallOptions): Promise<HeadView>
  /** One entry. @throws GoneError when retention pruned it (details name the covering checkpoint) */
  get(version: number, opts?: RegistryCallOptions): Promise<EntryView>
  /** The latest checkpoint (C2SP signed note text), with the witness cosignatures collected for it. */
  checkpoint(opts?: RegistryCallOptions): Promise<string>
  /**
   * A C2SP tile by its path relative to the log's prefix (`tile/0/x001/234.p/7`,
   * `tile/entries/000`; see `tilePath()`): raw bytes.
   * @throws GoneError for an entry bundle whose entries were pruned, NotFoundError for a tile the tree does not have
   */
  tile(path: string, opts?: RegistryCallOptions): Promise<Uint8Array>
  /** The exact leaf bytes of `version`. */
  leaf(version: number, opts?: RegistryCallOptions): Promise<Uint8Array>
  /** A payload kept by address (one too large to ride in its leaf): its canonical JSON bytes. */
  payload(payloadB3: string, opts?: RegistryCallOptions): Promise<Uint8Array>
  /** The inclusion proof of the leaf whose hash (hex or base64) is `leafHash`. */
  inclusionProofByHash(leafHash: string, treeSize?: number, opts?: RegistryCallOptions): Promise<InclusionProofView>
  inclusionProof(version: number, treeSize?: number, opts?: RegistryCallOptions): Promise<InclusionProofView>
  consistencyProof(from: number, to?: number, opts?: RegistryCallOptions): Promise<ConsistencyProofView>
  /**
   * Commits as they happen (SSE). With `lastEventId` (a version) the stream first replays what
   * came after it. Ends when `signal` aborts or the server closes the stream.
   */
  watch(opts?: { signal?: AbortSignal; lastEventId?: number }): AsyncIterable<RegistryUpdated>
}

/**
 * Creates a registry client.
 *
 * @example
 * ```ts
 * const client = createRegistryClient(transport, { token })
 * const p = await client.propose({ schemaVersion: 1, items: [] })
 * await client.approveWith(p.proposalId, signerKey)
 * const { version } = await client.commit(p.proposalId)
 * ```
 */
export function createRegistryClient(transport: Transport, options: RegistryClientOptions = {}): RegistryClient {
  const target = options.target ?? 'registry'

  async function call(method: string, path: string, body: unknown, opts: RegistryCallOptions = {}, headers: Record<string, string> = {}): Promise<TransportResponse> {
    const h: Record<string, string> = { accept: 'application/json', ...headers }
    const token = await resolveToken(options.token)
    if (token !== undefined) h['authorization'] = `Bearer ${token}`
    if (body !== undefined) h['content-type'] = 'application/json'
    const timeoutMs = opts.timeoutMs ?? options.timeoutMs
    const res = await transport.request(target, {
      method,
      path,
      headers: h,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    })
    await throwIfError(res)
    return res
  }
  const json = async <T>(method: string, path: string, body?: unknown, opts?: RegistryCallOptions, headers?: Record<string, string>): Promise<T> =>
    (await call(method, path, body, opts, headers)).json<T>()
  const enc = encodeURIComponent

  const client: RegistryClient = {
    propose: (payload, opts) => json('POST', '/registry/proposals', opts?.baseVersion === undefined ? { payload } : { payload, baseVersion: opts.baseVersion }, opts),
    approve: (id, approval, opts) => json('POST', `/registry/approvals/${enc(id)}`, { signerId: approval.signerId, sig: approval.sig }, opts),
    async approveWith(id, key, opts) {
      const [p, head] = await Promise.all([client.proposal(id, opts), client.head(opts)])
      return client.approve(id, signApproval(key, { origin: head.origin, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }), opts)
    },
    commit(id, opts) {
      const timeoutMs = opts?.timeoutMs ?? options.timeoutMs
      const body = opts?.approvals === undefined ? undefined : { approvals: opts.approvals.map((a) => ({ signerId: a.signerId, sig: a.sig })) }
      return json('POST', `/registry/commit/${enc(id)}`, body, opts, timeoutMs === undefined ? {} : { [DEADLINE_HEADER]: String(timeoutMs) })
    },
    supersede: (version, reason, opts) => json('POST', '/registry/supersede', opts?.items === undefined ? { version, reason } : { version, reason, items: opts.items }, opts),
    proposal: (id, opts) => json('GET', `/registry/proposals/${enc(id)}`, undefined, opts),
    head: (opts) => json('GET', '/registry/head', undefined, opts),
    get: (version, opts) => json('GET', `/registry/${version}`, undefined, opts),
    async checkpoint(opts) {
      return (await call('GET', '/registry/checkpoint', undefined, opts)).text()
    },
    async tile(path, opts) {
      if (!/^tile\/(entries|[0-9]{1,2})(\/x[0-9]{3})*\/[0-9]{3}(\.p\/[0-9]{1,3})?$/.test(path)) throw new RangeError(`not a tile path: ${path}`)
      return (await call('GET', `/registry/${path}`, undefined, opts, { accept: 'application/octet-stream' })).bytes()
    },
    async leaf(version, opts) {
      return (await call('GET', `/registry/${version}/leaf`, undefined, opts, { accept: 'application/octet-stream' })).bytes()
    },
    async payload(b3, opts) {
      return (await call('GET', `/registry/payload/${enc(b3)}`, undefined, opts)).bytes()
    },
    inclusionProofByHash: (leafHash, treeSize, opts) =>
      json('GET', `/registry/proof/inclusion?hash=${enc(leafHash)}${treeSize === undefined ? '' : `&treeSize=${treeSize}`}`, undefined, opts),
    inclusionProof: (version, treeSize, opts) => json('GET', `/registry/proof/inclusion?version=${version}${treeSize === undefined ? '' : `&treeSize=${treeSize}`}`, undefined, opts),
    consistencyProof: (from, to, opts) => json('GET', `/registry/proof/consistency?from=${from}${to === undefined ? '' : `&to=${to}`}`, undefined, opts),
    watch(opts = {}) {
      return {
        async *[Symbol.asyncIterator]() {
          const headers: Record<string, string> = { accept: 'text/event-stream' }
          if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId)
          const res = await transport.request(target, { method: 'GET', path: '/registry/stream', headers, ...(opts.signal === undefined ? {} : { signal: opts.signal }) })
          await throwIfError(res)
          // Replay and live events can overlap by a few versions: ids are versions, keep order.
          let last = opts.lastEventId ?? 0
          for await (const m of sseEvents(res.body, opts.signal === undefined ? {} : { signal: opts.signal })) {
            if (m.event !== UPDATED_EVENT) continue
            const u = JSON.parse(m.data) as RegistryUpdated
            if (u.version <= last) continue
            last = u.version
            yield u
          }
        },
      }
    },
  }
  return client
}
