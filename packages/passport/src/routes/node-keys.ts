/**
 * The public listing of enrolled node keys (SPEC.md §5 "Peers"): `GET /v1/passport/node-keys`
 * answers `{"nodes":[{"nodeId","nodeKey"}]}` without a token, so every node that uses this
 * passport can check a peer's node key against its enrolment instead of trusting the peer's first
 * answer. Only public keys are listed; the enrolled scopes and audiences stay behind
 * `GET /v1/passport/nodes` (scope `passport:admin`).
 *
 * @module
 */

import type { Route } from '@ron/core'
import type { PassportContext } from './context.js'

/** One enrolled node as the public listing shows it. */
export interface EnrolledNodeKey {
  /** The node id (`n` + 16 hex). */
  nodeId: string
  /** Its public node key, base64url raw Ed25519 (the `x` of its JWK). */
  nodeKey: string
}

/** The public node-key route. @internal */
export function nodeKeyRoutes(ctx: PassportContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/passport/node-keys',
      handler: () => ({
        status: 200,
        // Fresh on every read: a re-enrolment must reach the nodes that check against it.
        headers: { 'cache-control': 'no-store' },
        json: { nodes: ctx.nodes.list().flatMap((n): EnrolledNodeKey[] => (typeof n.publicJwk.x === 'string' ? [{ nodeId: n.nodeId, nodeKey: n.publicJwk.x }] : [])) },
      }),
    },
  ]
}
