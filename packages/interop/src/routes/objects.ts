/**
 * `GET|HEAD /o/:addr`: reads through index (which storage nodes hold it) and storage, streaming and
 * verifying the bytes against the address as they pass. Reads keep working during brownout and
 * do not take a `work` slot.
 *
 * Who is fetched from (SPEC §6a "Readers fetch only from endpoints of known nodes"): a provider
 * endpoint index returns is followed only when it is the storage URL of a node in the node
 * directory (without one: only when it is a transport target name, which the transport resolves
 * to a configured, in-process or named service); anything else — an internal URL an announcer
 * made up — is never contacted. What is sent back is typed by us, never by the provider: a raw
 * object has no manifest, so it is `application/octet-stream`, with `X-Content-Type-Options:
 * nosniff` so no browser guesses a type from the bytes.
 *
 * @module
 */

import {
  IntegrityFailedError,
  NotFoundError,
  NotReadyError,
  addressOf,
  createBlake3,
  isRonError,
  normalizeEndpoint,
  parseAddress,
  toAddress,
  type Address,
  type NodeDirectory,
  type Reply,
  type Route,
  type TransportResponse,
} from '@ron/core'
import { upstreamFailure } from '../upstream.js'
import type { InteropContext } from './context.js'

const MAX_PROVIDERS = 3

/** A transport target name (`storage`, `storage-b`): an endpoint followed without a node directory. */
const TARGET_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/i

/**
 * The target to fetch a provider's copy from, or `undefined` when `endpoint` is not one a read may
 * follow: the storage URL a known node advertises (with a directory), a transport target name
 * (without one).
 */
export function fetchableEndpoint(endpoint: string, nodes: NodeDirectory | undefined): string | undefined {
  if (nodes === undefined) return TARGET_NAME.test(endpoint) ? endpoint : undefined
  const url = normalizeEndpoint(endpoint)
  if (url === undefined) return undefined
  const storage = nodes.byEndpoint(url)?.services['storage']
  return storage !== undefined && normalizeEndpoint(storage) === url ? url : undefined
}

/** Provider endpoints of `address` from index; empty when index does not know it or is unavailable. */
async function providers(s: InteropContext, nodes: NodeDirectory | undefined, address: Address, signal: AbortSignal, corrId: string): Promise<string[]> {
  const cfg = s.cfg()
  try {
    const res = await s.upstreams.call(cfg.index.target, { op: 'index.resolve', method: 'GET', path: `/resolve/${address}`, timeoutMs: cfg.index.timeoutMs, idempotent: true, signal, corrId })
    if (res.status >= 400) {
      await res.dump()
      return []
    }
    const out = await res.json<{ providers?: Array<{ endpoint?: unknown }> }>()
    const targets: string[] = []
    for (const p of out.providers ?? []) {
      const target = typeof p.endpoint === 'string' ? fetchableEndpoint(p.endpoint, nodes) : undefined
      if (target === undefined) {
        s.logger.debug({ address, endpoint: typeof p.endpoint === 'string' ? p.endpoint.slice(0, 200) : typeof p.endpoint }, 'provider endpoint is no known node: not fetched')
        continue
      }
      targets.push(target)
      if (targets.length >= MAX_PROVIDERS) break
    }
    return targets
  } catch (e) {
    if (signal.aborted) throw e
    s.logger.debug({ err: e, address }, 'index resolve failed; reading from the configured storage')
    return []
  }
}

/**
 * Passes `body` through, hashing it, one chunk behind: the last chunk is released only once the
 * whole body hashes to `address`. A mismatch then fails the stream with at least one chunk still
 * unsent, so the client sees a short transfer — never a complete body (with its content-length
 * satisfied) of the wrong bytes.
 */
async function* verified(body: AsyncIterable<Uint8Array>, address: Address): AsyncGenerator<Uint8Array> {
  const h = createBlake3()
  let held: Uint8Array | undefined
  for await (const c of body) {
    if (c.byteLength === 0) continue
    h.update(c)
    if (held !== undefined) yield held
    // A copy: the source may reuse its buffer for the next chunk while this one is held.
    held = c.slice()
  }
  if (toAddress(h.digest()) !== address) throw new IntegrityFailedError('bytes from storage do not match the address', { details: { address } })
  if (held !== undefined) yield held
}

const EMPTY = addressOf(new Uint8Array(0))

/** Headers of every object answer: our type, never the provider's, and no sniffing. */
const OBJECT_HEADERS = { 'content-type': 'application/octet-stream', 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=31536000, immutable' } as const

async function getObject(s: InteropContext, nodes: NodeDirectory | undefined, method: 'GET' | 'HEAD', addrParam: string, signal: AbortSignal, corrId: string): Promise<Reply> {
  const address = parseAddress(addrParam)
  const cfg = s.cfg()
  const targets = [...new Set([...(await providers(s, nodes, address, signal, corrId)), cfg.storage.target])]
  let last: unknown
  for (const [i, target] of targets.entries()) {
    let res: TransportResponse
    try {
      // With another provider left to try, moving on beats backing off; the last one is retried.
      const last = i === targets.length - 1
      res = await s.upstreams.call(target, { op: 'storage.get', method, path: `/o/${address}`, timeoutMs: cfg.storage.timeoutMs, idempotent: last, signal, corrId })
    } catch (e) {
      if (signal.aborted) throw e
      last = e
      continue
    }
    if (res.status !== 200) {
      await res.dump()
      continue
    }
    const headers: Record<string, string> = { ...OBJECT_HEADERS, etag: `"${address}"` }
    const len = res.headers['content-length']
    if (len === '0' && address !== EMPTY) {
      // Nothing would be held back to cut: refuse before any header is sent, try the next provider.
      await res.dump()
      last = new NotReadyError('storage answered an empty body for a non-empty address', { details: { upstream: 'storage', reason: 'integrity', address } })
      continue
    }
    if (len !== undefined) headers['content-length'] = len
    if (method === 'HEAD') {
      await res.dump()
      return { status: 200, headers }
    }
    return { status: 200, headers, body: verified(res.body, address) }
  }
  // An upstream's 500 is a 503 of ours (retry later), never a 500.
  if (last !== undefined && isRonError(last)) throw upstreamFailure(last, 'storage')
  throw new NotFoundError('no provider has this object', { details: { address } })
}

/**
 * The read routes, GET and HEAD (public, not queued: reads stay up in brownout). `nodes`: the
 * directory whose storage URLs reads may follow (none: transport target names only).
 */
export function objectRoutes(s: InteropContext, nodes?: NodeDirectory): Route[] {
  return (['GET', 'HEAD'] as const).map((method) => ({
    method,
    path: '/o/:addr',
    name: `${method} /o/:addr`,
    handler: (ctx) => getObject(s, nodes, method, ctx.params.addr ?? '', ctx.signal, ctx.corrId),
  }))
}
