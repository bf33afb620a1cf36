/**
 * Witness routes (C2SP tlog-witness), the submission and monitoring prefix being
 * `/registry/witness`: `POST /registry/witness/add-checkpoint` (public: C2SP authenticates the
 * request by the log's signature on the checkpoint) and `GET /registry/witness/<sha256(origin)
 * hex>/checkpoint` (the latest checkpoint this node cosigned for that log).
 *
 * @module
 */

import { NotFoundError } from '@ron/core'
import type { Route } from '@ron/core'
import type { Witness } from '../witness.js'

/** A request of a few dozen proof lines and a note with at most 100 signatures fits easily. */
const BODY_LIMIT = 64 * 1024

/** The witness routes. */
export function witnessRoutes(witness: Witness): Route[] {
  return [
    {
      method: 'POST',
      path: '/registry/witness/add-checkpoint',
      public: true,
      bodyLimit: BODY_LIMIT,
      async handler(ctx) {
        const r = await witness.addCheckpoint(await ctx.bytes())
        if (typeof r !== 'string') {
          // The one answer whose body C2SP fixes: the size this witness cosigned last.
          return { status: 409, headers: { 'content-type': 'text/x.tlog.size', 'cache-control': 'no-store' }, body: `${r.size}\n` }
        }
        return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, body: r }
      },
    },
    {
      method: 'GET',
      path: '/registry/witness/:originHash/checkpoint',
      async handler(ctx) {
        const h = ctx.params['originHash'] ?? ''
        const cp = /^[0-9a-f]{64}$/.test(h) ? await witness.latest(h) : undefined
        if (cp === undefined) throw new NotFoundError('this witness has cosigned no checkpoint of that log', { details: { originHash: h } })
        return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' }, body: cp }
      },
    },
  ]
}
