/**
 * `GET /repair/plan` (the last plan, or `?dryRun=1` for a fresh one computed without enqueuing)
 * and `POST /repair/run` (a planner tick now). Both need `storage:admin`: planning probes peers.
 *
 * @module
 */

import type { Reply, Route, RouteContext } from '@ron/core'
import type { StorageContext } from './context.js'

async function plan(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const dry = ctx.query.get('dryRun')
  if (dry !== null && dry !== '0' && dry !== 'false') return { status: 200, json: await s.plan(true, ctx.signal) }
  return { status: 200, json: s.lastPlan() }
}

async function run(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  return { status: 200, json: await s.plan(false, ctx.signal) }
}

/** The repair routes. */
export function repairRoutes(s: StorageContext): Route[] {
  return [
    { method: 'GET', path: '/repair/plan', name: 'GET /repair/plan', scope: 'storage:admin', handler: (ctx) => plan(s, ctx) },
    { method: 'POST', path: '/repair/run', name: 'POST /repair/run', scope: 'storage:admin', handler: (ctx) => run(s, ctx) },
  ]
}
