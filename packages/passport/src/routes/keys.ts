/**
 * Key routes: the published key set (JWKS with epoch, status and validity windows), rotation, and
 * node enrolment for service identity.
 *
 * @module
 */

import type { Route } from '@ron/core'
import { enrolBodySchema } from '../dto.js'
import type { KeyringSnapshot } from '../keyring.js'
import type { PassportContext } from './context.js'

/** The summary `rotate` answers. */
export function ringSummary(s: KeyringSnapshot): { current: { kid: string; epoch: number }; next: { kid: string; epoch: number }; previous: Array<{ kid: string; epoch: number; retiresAt?: number }> } {
  return {
    current: { kid: s.current.kid, epoch: s.current.epoch },
    next: { kid: s.next.kid, epoch: s.next.epoch },
    previous: s.previous.map((k) => ({ kid: k.kid, epoch: k.epoch, ...(k.retiresAt === undefined ? {} : { retiresAt: k.retiresAt }) })),
  }
}

/** The key and node routes. @internal */
export function keyRoutes(ctx: PassportContext): Route[] {
  const jwks = (): { status: number; headers: Record<string, string>; json: unknown } => ({
    status: 200,
    headers: { 'cache-control': 'public, max-age=60' },
    json: ctx.keyring.jwks(),
  })
  return [
    { method: 'GET', path: '/v1/passport/keys', handler: jwks },
    { method: 'GET', path: '/.well-known/jwks.json', handler: jwks },
    {
      method: 'POST',
      path: '/v1/passport/rotate',
      scope: 'passport:admin',
      async handler() {
        return { status: 200, json: ringSummary(await ctx.rotate()) }
      },
    },
    {
      method: 'POST',
      path: '/v1/passport/nodes',
      scope: 'passport:admin',
      async handler(c) {
        const body = await c.json(enrolBodySchema)
        const node = await ctx.nodes.enrol(body)
        return { status: 201, json: node }
      },
    },
    {
      method: 'GET',
      path: '/v1/passport/nodes',
      scope: 'passport:admin',
      handler: () => ({ status: 200, json: { nodes: ctx.nodes.list() } }),
    },
  ]
}
