/**
 * Interop's admin routes (SPEC §5: scope `interop:admin`): webhook secrets and API keys set,
 * rotated and removed without a restart. A rotation keeps what it replaces accepted for an overlap
 * (`admin.rotationOverlapMs`, or the request's `overlapMs`). No answer, log line or metric carries
 * a secret or a key: they name ids.
 *
 * - `GET /admin/credentials`: the enabled providers' secret ids and the clients' key ids, with the
 *   expiry of the ones in their overlap.
 * - `PUT /admin/webhooks/:provider/secret` `{secret, overlapMs?}`: the provider's new secret.
 * - `PUT /admin/api-keys/:client` `{key | keyHash, maxBytes?, overlapMs?}`: the client's new key
 *   (the key is hashed at once; only its SHA-256 is kept).
 * - `DELETE /admin/api-keys/:client`: every key of the client refused at once.
 *
 * @module
 */

import { z } from 'zod'
import { MalformedError, NotFoundError, sizeSchema, type Logger, type Reply, type Route, type RouteContext } from '@ron/core'
import { MAX_OVERLAP_MS, hashApiKey, type InteropConfig } from '../config.js'
import type { Credentials } from '../credentials.js'
import type { InteropMetricHandles } from '../metrics.js'
import { standardSecretKey, webhookProvider } from '../webhooks/verify.js'

/** The scope every admin route requires. */
export const ADMIN_SCOPE = 'interop:admin'

const overlap = z.number().int().min(0).max(MAX_OVERLAP_MS).optional()
const secretBody = z.strictObject({
  /** At least 16 characters (a Standard Webhooks secret: `whsec_` + base64). */
  secret: z.string().min(16).max(1024),
  overlapMs: overlap,
})
const keyBody = z
  .strictObject({
    /** The key itself (hashed at once), at least 16 characters. */
    key: z.string().min(16).max(1024).optional(),
    /** Or its `sha256:` hash (`hashApiKey`). */
    keyHash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lower-case hex digits>').optional(),
    maxBytes: sizeSchema.optional(),
    overlapMs: overlap,
  })
  .refine((b) => (b.key === undefined) !== (b.keyHash === undefined), { message: 'give exactly one of key and keyHash', path: ['key'] })

/** What the admin routes need. */
export interface AdminDeps {
  credentials: Credentials
  cfg(): InteropConfig
  logger: Logger
  metrics: Pick<InteropMetricHandles, 'admin_changes_total'>
}

const CLIENT = /^[^\s\u0000-\u001f]{1,128}$/

/** The admin routes. */
export function adminRoutes(d: AdminDeps): Route[] {
  const overlapOf = (ms: number | undefined): number => ms ?? d.cfg().admin.rotationOverlapMs
  return [
    {
      method: 'GET',
      path: '/admin/credentials',
      name: 'GET /admin/credentials',
      scope: ADMIN_SCOPE,
      handler: (): Reply => ({ status: 200, headers: { 'cache-control': 'no-store' }, json: d.credentials.summary() }),
    },
    {
      method: 'PUT',
      path: '/admin/webhooks/:provider/secret',
      name: 'PUT /admin/webhooks/:provider/secret',
      scope: ADMIN_SCOPE,
      handler: async (ctx: RouteContext): Promise<Reply> => {
        const provider = webhookProvider(ctx.params.provider)
        if (provider === undefined) throw new NotFoundError(`no webhook provider '${ctx.params.provider ?? ''}'`, { details: { provider: ctx.params.provider ?? '' } })
        const body = await ctx.json(secretBody)
        if (provider === 'standard' && standardSecretKey(body.secret) === undefined) throw new MalformedError('a Standard Webhooks secret is whsec_ followed by base64', { details: { field: 'secret' } })
        const r = await d.credentials.rotateSecret(provider, body.secret, overlapOf(body.overlapMs))
        d.metrics.admin_changes_total.inc({ kind: 'webhook_secret' })
        d.logger.info({ provider, id: r.id, previous: r.previous.map((p) => p.id), sub: ctx.auth?.sub }, 'webhook secret rotated')
        return { status: 200, headers: { 'cache-control': 'no-store' }, json: { provider, ...r } }
      },
    },
    {
      method: 'PUT',
      path: '/admin/api-keys/:client',
      name: 'PUT /admin/api-keys/:client',
      scope: ADMIN_SCOPE,
      handler: async (ctx: RouteContext): Promise<Reply> => {
        const client = clientOf(ctx)
        const body = await ctx.json(keyBody)
        const keyHash = body.keyHash ?? hashApiKey(body.key!)
        const r = await d.credentials.rotateApiKey(client, keyHash, body.maxBytes, overlapOf(body.overlapMs))
        d.metrics.admin_changes_total.inc({ kind: 'api_key' })
        d.logger.info({ client, id: r.id, previous: r.previous.map((p) => p.id), sub: ctx.auth?.sub }, 'API key rotated')
        return { status: 200, headers: { 'cache-control': 'no-store' }, json: { client, ...r } }
      },
    },
    {
      method: 'DELETE',
      path: '/admin/api-keys/:client',
      name: 'DELETE /admin/api-keys/:client',
      scope: ADMIN_SCOPE,
      handler: async (ctx: RouteContext): Promise<Reply> => {
        const client = clientOf(ctx)
        const removed = await d.credentials.removeApiKeys(client)
        d.metrics.admin_changes_total.inc({ kind: 'api_key' })
        d.logger.info({ client, removed, sub: ctx.auth?.sub }, 'API keys removed')
        return { status: 200, json: { client, removed } }
      },
    },
  ]
}

function clientOf(ctx: RouteContext): string {
  const client = ctx.params.client ?? ''
  if (!CLIENT.test(client)) throw new MalformedError('a client name is 1 to 128 visible characters', { details: { field: 'client' } })
  return client
}
