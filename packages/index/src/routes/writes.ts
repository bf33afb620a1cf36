/**
 * The write routes: `PUT|DELETE /names/:name` (scope `index:write`) and `POST /providers` (scope
 * `index:announce`). The capability is checked before the job enters the `work` queue (seed I-11:
 * the host authenticates scoped routes before it enqueues).
 *
 * @module
 */

import { MalformedError, isRonError, parseAddress } from '@ron/core'
import type { Address, Route } from '@ron/core'
import { nameWriteSchema, providerAnnouncementSchema } from '../contracts.js'
import { fetchManifest } from '../manifest-fetch.js'
import { checkName } from '../names.js'
import { CHANNELS, ROUTES } from '../topology.js'
import type { IndexContext } from './context.js'

/** Parses `If-Match: "b3:…"` (quotes optional, a weak `W/` prefix refused). @throws {@link MalformedError}. */
export function parseIfMatch(v: string | string[] | undefined): Address | undefined {
  if (v === undefined) return undefined
  if (Array.isArray(v) || v.includes(',')) throw new MalformedError('If-Match must name one address', { details: { field: 'If-Match' } })
  const t = v.trim()
  const unquoted = t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t
  return parseAddress(unquoted, 'If-Match')
}

/** The write routes. */
export function writeRoutes(s: IndexContext): Route[] {
  return [
    {
      method: 'PUT',
      path: '/names/:name',
      name: ROUTES.names,
      scope: 'index:write',
      queue: CHANNELS.work,
      handler: async (ctx) => {
        const name = checkName(ctx.params.name ?? '')
        const body = await ctx.json(nameWriteSchema)
        try {
          const { manifest, text } = await fetchManifest(s.manifests, body.manifestAddress, ctx.signal)
          const { previous } = await s.store.put(name, { manifestAddress: body.manifestAddress, manifest, manifestText: text, updatedAt: s.clock.now() }, body.expectedPrevious)
          s.resolver.invalidate(name)
          s.metrics.nameWrites.inc({ result: 'ok' })
          s.metrics.names.set(s.store.count())
          s.events.publish({ type: 'name:set', name, manifestAddress: body.manifestAddress, previous })
          return { status: 200, json: { name, manifestAddress: body.manifestAddress, previous } }
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
      queue: CHANNELS.work,
      handler: async (ctx) => {
        const name = checkName(ctx.params.name ?? '')
        const expected = parseIfMatch(ctx.req.headers['if-match'])
        try {
          const { previous } = await s.store.delete(name, expected)
          s.resolver.invalidate(name)
          s.metrics.nameWrites.inc({ result: 'ok' })
          s.metrics.names.set(s.store.count())
          s.events.publish({ type: 'name:deleted', name, previous })
          return { status: 200, json: { name, deleted: true, previous } }
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
        const cfg = s.config()
        // Soft state: a record lives at most maxAnnounceTtlSec, whatever the announcer asks for.
        const ttlSec = Math.min(a.ttlSec, cfg.maxAnnounceTtlSec)
        const now = s.clock.now()
        const expiresAt = now + ttlSec * 1000
        const added = s.providers.announce(a.address, a.node, a.endpoint, expiresAt, now)
        s.resolver.invalidate(a.address)
        s.metrics.announcements.inc()
        s.metrics.providerRecords.set(s.providers.size)
        if (added) s.events.publish({ type: 'provider:added', address: a.address, node: a.node, endpoint: a.endpoint, expiresAt })
        return { status: 200, json: { address: a.address, node: a.node, ttlSec, expiresAt } }
      },
    },
  ]
}

function countFailure(s: IndexContext, e: unknown): void {
  if (isRonError(e, 'Conflict')) s.metrics.nameWrites.inc({ result: 'conflict' })
  else if (isRonError(e, 'InvalidReference')) s.metrics.nameWrites.inc({ result: 'invalid_reference' })
  else if (isRonError(e, 'Timeout')) s.metrics.ioTimeouts.inc({ op: 'storage' })
}
