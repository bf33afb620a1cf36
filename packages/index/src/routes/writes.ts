/**
 * The write routes: `PUT|DELETE /names/:name` (scope `index:write`) and `POST /providers` (scope
 * `index:announce`). The capability is checked before the job enters the `work` queue (seed I-11:
 * the host authenticates scoped routes before it enqueues).
 *
 * Trust boundaries (SPEC §5, §6a): a name write obeys the token's `namePrefix` caveat, is refused
 * with 409 when the name is homed on another node, and is kept by this node (its home) with the
 * next `seq`, signed when served; an announcement is accepted only from the node it is about (token `sub:
 * node:<id>`), for an endpoint that node advertises.
 *
 * @module
 */

import { ConflictError, ForbiddenError, MalformedError, isRonError, nameWithinPrefix, normalizeEndpoint, parseAddress } from '@ron/core'
import type { Address, Claims, Route } from '@ron/core'
import { providerAnnouncementSchema, type ProviderAnnouncement } from '../contracts.js'
import { ManifestCache, fetchManifest, type VerifiedManifest } from '../manifest-fetch.js'
import { ANNOUNCE_REFUSALS } from '../metrics.js'
import { signNameRecord, type StoredNameRecord } from '../name-record.js'
import { checkName } from '../names.js'
import type { NameRecord, NameState, WriteResult } from '../store/types.js'
import { CHANNELS, ROUTES } from '../topology.js'
import { nameWriteBody } from './plain-write.js'
import type { IndexContext } from './context.js'

/** Parses `If-Match: "b3:…"` (quotes optional, a weak `W/` prefix refused). @throws {@link MalformedError}. */
export function parseIfMatch(v: string | string[] | undefined): Address | undefined {
  if (v === undefined) return undefined
  if (Array.isArray(v) || v.includes(',')) throw new MalformedError('If-Match must name one address', { details: { field: 'If-Match' } })
  const t = v.trim()
  const unquoted = t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t
  return parseAddress(unquoted, 'If-Match')
}

/**
 * Enforces the `namePrefix` caveat (SPEC §5): the token may write `name` only when it is the
 * prefix or a name under it.
 * @throws {@link ForbiddenError} with `details: {reason: 'caveat', caveat: 'namePrefix', namePrefix}`.
 */
export function checkNamePrefix(claims: Pick<Claims, 'ron'> | undefined, name: string): void {
  const prefix = claims?.ron?.namePrefix
  if (prefix === undefined || nameWithinPrefix(name, prefix)) return
  throw new ForbiddenError(`token allows names under '${prefix}' only`, { details: { reason: 'caveat', caveat: 'namePrefix', namePrefix: prefix } })
}

/** A transport target name (`storage`, `storage-b`): what an endpoint may be without a node directory. */
const TARGET_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/i

/** The next `seq` of a name homed here: one more than anything signed for it so far. */
function nextSeq(state: NameState): number {
  const bound = state.binding === undefined ? 0 : (state.binding.record?.seq ?? 1)
  return Math.max(bound, state.tombstone?.seq ?? 0) + 1
}

/** The write routes. */
export function writeRoutes(s: IndexContext): Route[] {
  /**
   * Refuses (409, `details.home`) a write of a name homed on another node: the writer must write
   * it there, with its own token (nodes never forward writes). A name this node holds (bound or
   * deleted) is homed here. Takes the context, not its signal: the signal is made only when the
   * peers are asked (a queued job's is linked on first read).
   */
  const checkHome = (name: string, ctx: { readonly signal: AbortSignal }): NameState | Promise<NameState> => {
    const state: NameState = s.store.stateForWrite?.(name) ?? { binding: s.store.get(name), tombstone: s.store.tombstone(name) }
    // A store the cluster shares is linearizable: names have no home there. A name held here is
    // answered without a promise (the common case: no await, no microtask hop).
    if (s.store.shared === true || state.binding !== undefined || state.tombstone !== undefined) return state
    return homeElsewhere(name, state, ctx.signal)
  }
  /** Asks the peers where `name` is homed (it is not held here). */
  const homeElsewhere = async (name: string, state: NameState, signal: AbortSignal): Promise<NameState> => {
    const home = await s.resolver.remoteHome(name, signal)
    if (home === undefined || home.node === s.identity.id) return state
    // A tombstone past its keeping time no longer holds the name.
    if (home.manifestAddress === null && home.signedAt + s.config().tombstoneTtlSec * 1000 < s.clock.now()) return state
    throw new ConflictError(`name '${name}' is homed on node ${home.node}: write it there`, {
      details: { name, reason: 'home_elsewhere', node: home.node, home: s.nodes?.get(home.node)?.admin ?? null },
    })
  }
  /** Runs a store write: a disk fault turns name writes unready (and is the answer). */
  const storeWrite = async <T>(write: () => Promise<T>): Promise<T> => {
    s.writable()
    try {
      return await write()
    } catch (e) {
      s.storeFailed(e)
      throw e
    }
  }
  /**
   * The record a write keeps: its fields, signed when served (`RecordSigner`: Ed25519 is
   * deterministic, so the record served is the one a signature now would give). A store the
   * cluster shares keeps it signed: the other nodes serve the tombstones this node wrote.
   */
  const recordFor = (name: string, manifestAddress: Address | null, seq: number, signedAt: number): StoredNameRecord =>
    s.store.shared === true
      ? signNameRecord(s.identity, { name, manifestAddress, seq, node: s.identity.id, signedAt })
      : { name, manifestAddress, seq, node: s.identity.id, signedAt }
  /** Manifests verified lately: binding more names to one costs no storage round trip. */
  const verified = new ManifestCache()
  /**
   * The manifest at `address`, checked: the name's own binding when it is already bound to it,
   * one verified within the last minute, or a fetch from storage (which verifies it).
   */
  const manifestOf = (current: NameRecord | undefined, address: Address, ctx: { readonly signal: AbortSignal }): VerifiedManifest | Promise<VerifiedManifest> => {
    const hit = verified.get(address, s.clock.now())
    if (hit !== undefined) return hit
    if (current?.manifestAddress === address && current.manifest !== undefined && current.manifestText !== undefined) return { manifest: current.manifest, text: current.manifestText }
    return fetchVerified(address, ctx.signal)
  }
  const fetchVerified = async (address: Address, signal: AbortSignal): Promise<VerifiedManifest> => {
    const m = await fetchManifest(s.manifests, address, signal)
    verified.set(address, m, s.clock.now())
    return m
  }

  return [
    {
      method: 'PUT',
      path: '/names/:name',
      name: ROUTES.names,
      scope: 'index:write',
      queue: CHANNELS.names,
      handler: async (ctx) => {
        const name = checkName(ctx.params.name ?? '')
        checkNamePrefix(ctx.auth, name)
        const body = await ctx.json(nameWriteBody)
        try {
          s.writable()
          const home = checkHome(name, ctx)
          const state = home instanceof Promise ? await home : home
          const verifiedManifest = manifestOf(state.binding, body.manifestAddress, ctx)
          const { manifest, text } = verifiedManifest instanceof Promise ? await verifiedManifest : verifiedManifest
          let seq = 0
          let result: WriteResult
          // The disk gate again (the checks above may have waited), then the store write: a disk
          // fault turns name writes unready (and is the answer).
          s.writable()
          try {
            result = await s.store.put(name, body.expectedPrevious, (now) => {
              seq = nextSeq(now)
              const at = s.clock.now()
              const record = recordFor(name, body.manifestAddress, seq, at)
              // A directory manifest is kept by storage, not here: a binding holds its address only.
              return manifest.kind === 'dir'
                ? { manifestAddress: body.manifestAddress, kind: 'dir', updatedAt: at, record }
                : { manifestAddress: body.manifestAddress, manifest, manifestText: text, updatedAt: at, record }
            })
          } catch (e) {
            s.storeFailed(e)
            throw e
          }
          const { previous } = result
          s.remote.forget(name)
          s.signer.forget(name)
          s.resolver.invalidate(name)
          s.metrics.nameWrites.inc({ result: 'ok' })
          // Only a new name changes the count (counting is not free on LMDB).
          if (previous === null) s.metrics.names.set(s.store.count())
          s.events.publish({ type: 'name:set', name, manifestAddress: body.manifestAddress, previous, seq })
          return { status: 200, json: { name, manifestAddress: body.manifestAddress, previous, seq } }
        } catch (e) {
          countFailure(s, e)
          throw e
        }
      },
    },
    {
      method: 'DELETE',
      path: '/names/:name',
      name: ROUTES.names,
      scope: 'index:write',
      queue: CHANNELS.names,
      handler: async (ctx) => {
        const name = checkName(ctx.params.name ?? '')
        checkNamePrefix(ctx.auth, name)
        const expected = parseIfMatch(ctx.req.headers['if-match'])
        try {
          s.writable()
          await checkHome(name, ctx)
          let seq = 0
          const { previous } = await storeWrite(() =>
            s.store.delete(name, expected, (binding, tombstone) => {
              seq = nextSeq({ binding, tombstone })
              return recordFor(name, null, seq, s.clock.now())
            }),
          )
          s.signer.forget(name)
          s.resolver.invalidate(name)
          s.metrics.nameWrites.inc({ result: 'ok' })
          s.metrics.names.set(s.store.count())
          s.events.publish({ type: 'name:deleted', name, previous, seq })
          return { status: 200, json: { name, deleted: true, previous, seq } }
        } catch (e) {
          countFailure(s, e)
          throw e
        }
      },
    },
    {
      method: 'POST',
      path: '/providers',
      name: ROUTES.announce,
      scope: 'index:announce',
      queue: CHANNELS.work,
      handler: async (ctx) => {
        const a = await ctx.json(providerAnnouncementSchema)
        const endpoint = checkAnnouncement(s, a, ctx.auth?.sub)
        const cfg = s.config()
        // Soft state: a record lives at most maxAnnounceTtlSec, whatever the announcer asks for.
        const ttlSec = Math.min(a.ttlSec, cfg.maxAnnounceTtlSec)
        const now = s.clock.now()
        const expiresAt = now + ttlSec * 1000
        // Records are keyed by node: an announcement replaces only its own node's record.
        const added = s.providers.announce(a.address, a.node, endpoint, expiresAt, now)
        s.resolver.invalidate(a.address)
        s.metrics.announcements.inc()
        s.metrics.providerRecords.set(s.providers.size)
        if (added) s.events.publish({ type: 'provider:added', address: a.address, node: a.node, endpoint, expiresAt })
        return { status: 200, json: { address: a.address, node: a.node, ttlSec, expiresAt } }
      },
    },
  ]
}

/**
 * Checks that an announcement belongs to its caller (SPEC §6a "Announcements belong to their
 * node") and returns the endpoint to record: `node` must be the caller's own node id (token `sub:
 * node:<id>`); with a node directory, `endpoint` must be an `http(s)` URL that the node `node`
 * advertises (this node's own URLs included); without one (embedded, in-process transports) it
 * may also be a transport target name. Anything else (`javascript:`, `file:`, a URL with
 * credentials or a query) is refused.
 * @throws {@link ForbiddenError} (`not_own_node`, `unknown_endpoint`), {@link MalformedError} (`bad_endpoint`).
 */
function checkAnnouncement(s: IndexContext, a: ProviderAnnouncement, sub: string | undefined): string {
  const refuse = (reason: (typeof ANNOUNCE_REFUSALS)[number], e: Error): never => {
    s.metrics.announcementsRefused.inc({ reason })
    throw e
  }
  if (sub !== `node:${a.node}`) {
    refuse('not_own_node', new ForbiddenError('a node announces only for itself: node must be the token subject', { details: { reason: 'not_own_node', field: 'node' } }))
  }
  const url = normalizeEndpoint(a.endpoint)
  if (url === undefined && (s.nodes !== undefined || !TARGET_NAME.test(a.endpoint))) {
    refuse('bad_endpoint', new MalformedError('endpoint must be an http(s) URL without credentials, query or fragment', { details: { field: 'endpoint', reason: 'bad_endpoint' } }))
  }
  if (s.nodes !== undefined && s.nodes.byEndpoint(url!)?.id !== a.node) {
    refuse('unknown_endpoint', new ForbiddenError(`endpoint is not a URL node ${a.node} advertises`, { details: { reason: 'unknown_endpoint', field: 'endpoint' } }))
  }
  return url ?? a.endpoint
}

function countFailure(s: IndexContext, e: unknown): void {
  if (isRonError(e, 'Conflict')) s.metrics.nameWrites.inc({ result: (e.details as { reason?: unknown }).reason === 'home_elsewhere' ? 'home_elsewhere' : 'conflict' })
  else if (isRonError(e, 'InvalidReference')) s.metrics.nameWrites.inc({ result: 'invalid_reference' })
  else if (isRonError(e, 'NotReady')) s.metrics.nameWrites.inc({ result: 'not_ready' })
  else if (isRonError(e, 'Timeout')) s.metrics.ioTimeouts.inc({ op: 'storage' })
}
