/**
 * The typed client of the index HTTP API. It speaks through any {@link Transport}
 * (`MemoryTransport` in-process, `HttpTransport` over the network) and turns error envelopes into
 * typed errors.
 *
 * @module
 */

import { resolveToken, throwIfError } from '@ron/core'
import type { Address, ProviderAnnouncement, TokenSource, Transport, TransportResponse } from '@ron/core'
import type { ProvidersAnswer, Resolution } from './answer.js'
import type { NameList } from './routes/names.js'

/** Options of {@link createIndexClient}. */
export interface IndexClientOptions {
  /** Transport target of the index service (a name or a base URL). @default 'index' */
  target?: string
  /** Bearer token (or a function returning one) for writes: `index:write` for names, `index:announce` for announcements. @default undefined */
  token?: TokenSource
  /** Per-call deadline. @default the transport's default */
  timeoutMs?: number
}

/** Per-call options. */
export interface IndexCallOptions {
  signal?: AbortSignal
}

/** Result of {@link IndexClient.setName}. */
export interface NameWriteResult {
  name: string
  manifestAddress: Address
  /** What the name was bound to before (`null`: it was new). */
  previous: Address | null
  /** The `seq` of the record the name's home signed for this write. */
  seq: number
}

/** Result of {@link IndexClient.deleteName}. */
export interface NameDeleteResult {
  name: string
  deleted: true
  previous: Address | null
  /** The `seq` of the tombstone the name's home signed. */
  seq: number
}

/** Result of {@link IndexClient.announce}. */
export interface AnnounceResult {
  address: Address
  node: string
  /** The TTL granted (capped by the index's `maxAnnounceTtlSec`). */
  ttlSec: number
  expiresAt: number
}

/** The index API. Every method throws the server's typed error (`NotFoundError`, `ConflictError`, …). */
export interface IndexClient {
  /**
   * Resolves a name or a `b3:` address.
   * @throws {@link NotFoundError}, {@link TimeoutError} (504), {@link MalformedError}, {@link BusyError}
   */
  resolve(key: string, options?: IndexCallOptions & { fresh?: boolean }): Promise<Resolution>
  /** The ranked providers of `address` (`limit` 1..32, default 5). @throws {@link NotFoundError} */
  providers(address: string, options?: IndexCallOptions & { limit?: number; fresh?: boolean }): Promise<ProvidersAnswer>
  /**
   * Binds `name` to the manifest at `manifestAddress`. `expectedPrevious`: omitted =
   * unconditional, `null` = create only, an address = compare-and-set.
   * @throws {@link ConflictError} when the binding is not the expected one;
   *   {@link InvalidReferenceError} when the address is not a manifest in storage.
   */
  setName(name: string, manifestAddress: string, options?: IndexCallOptions & { expectedPrevious?: string | null }): Promise<NameWriteResult>
  /**
   * Removes the binding of `name`, only if it is `ifMatch` when given.
   * @throws {@link NotFoundError}, {@link ConflictError}
   */
  deleteName(name: string, options?: IndexCallOptions & { ifMatch?: string }): Promise<NameDeleteResult>
  /**
   * Announces a provider (SPEC §6a DTO). The token must be the node's own (`sub: node:<node>`).
   * @throws {@link ForbiddenError} (`details.reason` `not_own_node`, `unknown_endpoint`), {@link MalformedError} (`bad_endpoint`)
   */
  announce(a: ProviderAnnouncement, options?: IndexCallOptions): Promise<AnnounceResult>
  /** One page of the names homed on this index, in name order (`limit` 1..1000, default 100). */
  listNames(options?: IndexCallOptions & { prefix?: string; cursor?: string; limit?: number }): Promise<NameList>
}

/**
 * Creates an index client.
 *
 * @example
 * ```ts
 * const index = createIndexClient(transport, { token: writeToken })
 * await index.setName('docs.alice', manifestAddress, { expectedPrevious: null })
 * const r = await index.resolve('docs.alice')
 * ```
 */
export function createIndexClient(transport: Transport, options: IndexClientOptions = {}): IndexClient {
  const target = options.target ?? 'index'
  const call = async (method: string, path: string, o: IndexCallOptions | undefined, body?: unknown, extra: Record<string, string> = {}, auth = false): Promise<TransportResponse> => {
    const headers: Record<string, string> = { accept: 'application/json', ...extra }
    if (auth) {
      const token = await resolveToken(options.token)
      if (token !== undefined) headers.authorization = `Bearer ${token}`
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await transport.request(target, {
      method,
      path,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(o?.signal === undefined ? {} : { signal: o.signal }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    })
    await throwIfError(res)
    return res
  }
  return {
    async resolve(key, o) {
      const res = await call('GET', `/resolve/${encodeURIComponent(key)}${o?.fresh === true ? '?fresh=1' : ''}`, o)
      return res.json<Resolution>()
    },
    async providers(address, o) {
      const q = new URLSearchParams()
      if (o?.limit !== undefined) q.set('limit', String(o.limit))
      if (o?.fresh === true) q.set('fresh', '1')
      const qs = q.size > 0 ? `?${q.toString()}` : ''
      const res = await call('GET', `/providers/${encodeURIComponent(address)}${qs}`, o)
      return res.json<ProvidersAnswer>()
    },
    async setName(name, manifestAddress, o) {
      const body: Record<string, unknown> = { manifestAddress }
      if (o?.expectedPrevious !== undefined) body.expectedPrevious = o.expectedPrevious
      const res = await call('PUT', `/names/${encodeURIComponent(name)}`, o, body, {}, true)
      return res.json<NameWriteResult>()
    },
    async deleteName(name, o) {
      const res = await call('DELETE', `/names/${encodeURIComponent(name)}`, o, undefined, o?.ifMatch === undefined ? {} : { 'if-match': `"${o.ifMatch}"` }, true)
      return res.json<NameDeleteResult>()
    },
    async announce(a, o) {
      const res = await call('POST', '/providers', o, a, {}, true)
      return res.json<AnnounceResult>()
    },
    async listNames(o) {
      const q = new URLSearchParams()
      if (o?.prefix !== undefined) q.set('prefix', o.prefix)
      if (o?.cursor !== undefined) q.set('cursor', o.cursor)
      if (o?.limit !== undefined) q.set('limit', String(o.limit))
      const res = await call('GET', `/names${q.size > 0 ? `?${q.toString()}` : ''}`, o)
      return res.json<NameList>()
    },
  }
}
