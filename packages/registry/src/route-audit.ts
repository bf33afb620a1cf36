/**
 * The audit of refusals at the route level (issue 21): a mutation refused before it reaches the
 * Committer — no or a bad token (401), a missing scope (403), a malformed body (400), a full queue
 * or an admission limit (429), writes shed or draining (503) — leaves the same audit event as one
 * the Committer refuses: `registry_updates_total{result="<op>_rejected"}` and a log line. Refusals
 * the Committer already audited are not counted twice; reads (a 404 on a proposal) are no writes.
 *
 * @module
 * @internal
 */

import type { RonError, RonRequest, Route, ServiceHost } from '@ron/core'
import type { Committer } from './committer.js'
import type { RegistryConfig } from './config.js'

/** Write routes by metric label → the audited operation. */
const OPS: Readonly<Record<string, string>> = {
  '/registry/proposals': 'propose',
  '/registry/approvals/:proposalId': 'approve',
  '/registry/commit/:proposalId': 'commit',
  '/registry/supersede': 'supersede',
}

/** Intake refusals (the drain stopped intake) are answered before routing: matched by path. */
const PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ['/registry/proposals', 'propose'],
  ['/registry/approvals/', 'approve'],
  ['/registry/commit/', 'commit'],
  ['/registry/supersede', 'supersede'],
]

/** The audited operation of a refused request, or undefined when it is no registry mutation. */
export function refusedOp(route: string, req: Pick<RonRequest, 'method' | 'url'>): string | undefined {
  if (req.method !== 'POST') return undefined
  const op = OPS[route]
  if (op !== undefined) return op
  if (route !== 'unmatched') return undefined
  const path = req.url.split('?', 1)[0]!
  for (const [prefix, o] of PREFIXES) if (path === prefix || (prefix.endsWith('/') && path.startsWith(prefix))) return o
  return undefined
}

/** Audits every refusal of a registry mutation that the Committer did not see. */
export function auditRouteRefusals(host: ServiceHost<RegistryConfig>, routes: readonly Route[], committer: Committer): void {
  for (const r of routes) if (r.method === 'POST' && OPS[r.name ?? r.path] === undefined) throw new Error(`route-audit: POST ${r.path} has no audited operation`)
  host.onError((err: RonError, route: string, req: RonRequest) => {
    if (committer.audited(err)) return
    const op = refusedOp(route, req)
    if (op === undefined) return
    host.metrics.sink.inc('registry_updates_total', { result: `${op}_rejected` })
    const reason = typeof err.details['reason'] === 'string' ? err.details['reason'] : undefined
    host.logger.info({ op, code: err.code, status: err.status, ...(reason === undefined ? {} : { reason }), stage: 'route' }, 'registry mutation rejected')
  })
}
