/**
 * What may be minted (SPEC.md section 5, "Authority never grows"): the rules of `issue` and
 * `attenuate` — a token minted from a token never carries more than that token: scopes ⊆ the
 * caller's, audiences ⊆ the services its scopes name (and ⊆ the caller's), `exp` ≤ the caller's,
 * every caveat of the caller kept or tightened — and of service tokens (at most the service-call
 * scopes). The issuance policy only narrows: it is looked up by the caller's `sub`, which any
 * issuer can choose, so it can take away but never grant. Pure functions over immutable data.
 *
 * @module
 */

import {
  ForbiddenError,
  MalformedError,
  NotReadyError,
  isNormalizedPath,
  isScope,
  isServiceCallScope,
  isValidName,
  nameWithinPrefix,
  scopeService,
  type Caveats,
  type Claims,
} from '@ron/core'
import type { Policy } from './config.js'

/** Caveats as a request carries them (the core catalog). */
export interface CaveatsInput {
  maxBytes?: number | undefined
  pathPrefix?: string | undefined
  methods?: string[] | undefined
  namePrefix?: string | undefined
}

/** Drops absent members: the `ron` claim carries only the caveats that are set. */
export function toCaveats(c: CaveatsInput): Caveats {
  const out: Caveats = {}
  if (c.maxBytes !== undefined) out.maxBytes = c.maxBytes
  if (c.pathPrefix !== undefined) out.pathPrefix = c.pathPrefix
  if (c.methods !== undefined) out.methods = [...c.methods]
  if (c.namePrefix !== undefined) out.namePrefix = c.namePrefix
  return out
}

/** A token request after validation: what {@link checkIssue} decides on. */
export interface IssueRequest {
  sub: string
  aud: string[]
  scope: string[]
  ttlSec?: number | undefined
  caveats?: CaveatsInput | undefined
}

/** The claims of a token to mint, as decided by {@link checkIssue} or {@link narrow} (`iat`, `jti`, `prf` are added at signing). */
export interface ChildPlan {
  sub: string
  aud: string[]
  scope: string[]
  /** JWT seconds. */
  exp: number
  nbf?: number
  caveats?: Caveats
}

const uniq = (xs: readonly string[]): string[] => [...new Set(xs)]

function forbidden(message: string, field: string, extra: Record<string, unknown> = {}): ForbiddenError {
  return new ForbiddenError(message, { details: { reason: 'policy', field, ...extra } })
}

function widen(field: string, message: string, extra: Record<string, unknown> = {}): ForbiddenError {
  return new ForbiddenError(message, { details: { reason: 'widen', field, ...extra } })
}

/** The `sub` prefix of service identities: only enrolment and the host's own minter give it out. */
const NODE_SUB = 'node:'

/** True when path prefix `child` stays inside `parent` (the same boundary rule as `checkCaveats`). */
export function prefixWithin(child: string, parent: string): boolean {
  return child === parent || (child.startsWith(parent) && (parent.endsWith('/') || child.charAt(parent.length) === '/'))
}

/**
 * The caveats of a token minted from `parent` with `requested` ones: every caveat of the parent is
 * kept, a requested one may only tighten it (maxBytes ≤, methods ⊆, pathPrefix and namePrefix
 * within), and a caveat the parent lacks may be added.
 * @throws {@link ForbiddenError} (`widen`, `field: 'caveats.<name>'`) for a looser caveat
 * @throws {@link MalformedError} for a pathPrefix that is not normalised or a namePrefix that is not a name
 */
export function narrowCaveats(parent: Caveats | undefined, requested: CaveatsInput | undefined): Caveats | undefined {
  const p = parent ?? {}
  const c = toCaveats(requested ?? {})
  // Every parent caveat carries over, known to passport or not (caveats fail closed downstream).
  const out: Caveats = {}
  for (const name of Object.keys(p)) out[name] = p[name]
  if (c.maxBytes !== undefined) {
    if (p.maxBytes !== undefined && c.maxBytes > p.maxBytes) throw widen('caveats.maxBytes', 'maxBytes is larger than the parent', { maxBytes: p.maxBytes })
    out.maxBytes = c.maxBytes
  }
  if (c.methods !== undefined) {
    const up = uniq(c.methods.map((m) => m.toUpperCase()))
    if (p.methods !== undefined) {
      const allowed = new Set(p.methods.map((m) => m.toUpperCase()))
      for (const m of up) if (!allowed.has(m)) throw widen('caveats.methods', `method ${m} is not allowed by the parent`, { method: m })
    }
    out.methods = up
  }
  if (c.pathPrefix !== undefined) {
    if (!isNormalizedPath(c.pathPrefix)) throw new MalformedError('pathPrefix must be a normalised path (no ., .. or //)', { details: { field: 'caveats.pathPrefix' } })
    if (p.pathPrefix !== undefined && !prefixWithin(c.pathPrefix, p.pathPrefix)) {
      throw widen('caveats.pathPrefix', 'pathPrefix is outside the parent prefix', { pathPrefix: p.pathPrefix })
    }
    out.pathPrefix = c.pathPrefix
  }
  if (c.namePrefix !== undefined) {
    if (!isValidName(c.namePrefix)) throw new MalformedError('namePrefix must be a name (lowercase DNS labels)', { details: { field: 'caveats.namePrefix' } })
    if (p.namePrefix !== undefined && !nameWithinPrefix(c.namePrefix, p.namePrefix)) {
      throw widen('caveats.namePrefix', 'namePrefix is outside the parent namePrefix', { namePrefix: p.namePrefix })
    }
    out.namePrefix = c.namePrefix
  }
  return Object.keys(out).length === 0 ? undefined : out
}

/**
 * Checks that every audience is a service the scopes name (`storage:write` → `storage`).
 * @throws {@link ForbiddenError} (`widen`, `field: 'aud'`)
 */
function audiencesNamedByScopes(aud: readonly string[], scope: readonly string[]): void {
  const services = new Set(scope.map(scopeService))
  for (const a of aud) if (!services.has(a)) throw widen('aud', `audience ${a} is not a service the token's scopes name`, { aud: a })
}

/**
 * Decides a token issued by `caller` (the verified bearer token) for `req` at `nowSec`: within
 * what the caller's token grants (scopes, audiences, exp, caveats), and narrowed by the policy
 * entry for the caller's `sub` (or `*`). The token's `sub` is the request's, except that service
 * identities (`node:…`) are never issued.
 * @throws {@link NotReadyError} (`no_policy`) without a policy — passport never issues without one
 * @throws {@link MalformedError} for a scope outside the catalog
 * @throws {@link ForbiddenError} `missing_scope` when the caller lacks `passport:issue`; `widen`
 *   (`field`) for more than the caller holds; `policy` (`field`) when the policy does not allow it
 */
export function checkIssue(policy: Policy | undefined, caller: Claims, req: IssueRequest, nowSec: number): ChildPlan {
  if (policy === undefined) throw new NotReadyError('passport has no issuance policy', { details: { reason: 'no_policy' }, retryAfterMs: 1000 })
  if (!caller.scope.includes('passport:issue')) throw new ForbiddenError('token lacks scope passport:issue', { details: { reason: 'missing_scope', scope: 'passport:issue' } })
  if (req.sub.startsWith(NODE_SUB)) throw forbidden('service identities (node:…) come from enrolment, not from issue', 'sub', { sub: req.sub })
  // Own keys only: a caller named `constructor` or `__proto__` must not find Object.prototype's members.
  const own = (k: string): Policy['callers'][string] | undefined => (Object.hasOwn(policy.callers, k) ? policy.callers[k] : undefined)
  const who = caller.sub
  const rule = own(who) ?? own('*')
  if (rule === undefined) throw forbidden(`the policy lets ${who} issue nothing`, 'sub', { caller: who })
  const scope = uniq(req.scope)
  for (const s of scope) {
    if (!isScope(s)) throw new MalformedError(`unknown scope '${s}'`, { details: { field: 'scope', scope: s } })
    if (!caller.scope.includes(s)) throw widen('scope', `scope ${s} is not in the caller's token`, { scope: s })
    if (!rule.scopes.includes('*') && !rule.scopes.includes(s)) throw forbidden(`the policy does not let ${who} issue scope ${s}`, 'scope', { scope: s })
  }
  const aud = uniq(req.aud)
  audiencesNamedByScopes(aud, scope)
  for (const a of aud) {
    if (!caller.aud.includes(a)) throw widen('aud', `audience ${a} is not in the caller's token`, { aud: a })
    if (!rule.audiences.includes('*') && !rule.audiences.includes(a)) throw forbidden(`the policy does not let ${who} issue for audience ${a}`, 'aud', { aud: a })
  }
  const max = Math.min(policy.maxTtlSec, rule.maxTtlSec ?? Infinity)
  const ttlSec = req.ttlSec ?? Math.min(policy.defaultTtlSec, max)
  if (ttlSec > max) throw forbidden(`ttlSec ${ttlSec} is over the policy's maximum ${max}`, 'ttlSec', { maxTtlSec: max })
  let exp = nowSec + ttlSec
  if (exp > caller.exp) {
    // An explicit ttl past the caller is refused; the default one stops where the caller does.
    if (req.ttlSec !== undefined) throw widen('ttlSec', "the token would outlive the caller's", { exp, callerExp: caller.exp })
    exp = caller.exp
  }
  if (req.caveats !== undefined) {
    for (const name of Object.keys(toCaveats(req.caveats))) {
      if (!policy.caveats.includes(name)) throw forbidden(`the policy does not allow caveat ${name}`, 'caveats', { caveat: name })
    }
  }
  const caveats = narrowCaveats(caller.ron, req.caveats)
  const plan: ChildPlan = { sub: req.sub, aud, scope, exp }
  if (caller.nbf !== undefined) plan.nbf = caller.nbf
  if (caveats !== undefined) plan.caveats = caveats
  return plan
}

/** A narrowing request: every field optional (omitted = same as the parent). */
export interface AttenuateRequest {
  scope?: string[] | undefined
  aud?: string[] | undefined
  /** Lifetime from now; the child's `exp` must not pass the parent's. */
  ttlSec?: number | undefined
  caveats?: CaveatsInput | undefined
}

/**
 * Narrows `parent` by `req` at `nowSec`. The child keeps the parent's `sub`, a subset of its
 * scopes, audiences within the parent's and named by the child's scopes (omitted: the parent's
 * that are), an `exp` no later than the parent's, and every parent caveat at least as tight (a
 * caveat the parent has can only be tightened, never dropped).
 * @throws {@link ForbiddenError} (`details.reason: 'widen'`, `field`) for anything wider
 */
export function narrow(parent: Claims, req: AttenuateRequest, nowSec: number): ChildPlan {
  const scope = req.scope === undefined ? [...parent.scope] : uniq(req.scope)
  for (const s of scope) if (!parent.scope.includes(s)) throw widen('scope', `scope ${s} is not in the parent token`, { scope: s })
  const named = new Set(scope.map(scopeService))
  const aud = req.aud === undefined ? parent.aud.filter((a) => named.has(a)) : uniq(req.aud)
  if (aud.length === 0) {
    if (req.aud === undefined) throw widen('aud', "none of the parent's audiences is a service the child's scopes name")
    throw new MalformedError('aud must name at least one service', { details: { field: 'aud' } })
  }
  for (const a of aud) if (!parent.aud.includes(a)) throw widen('aud', `audience ${a} is not in the parent token`, { aud: a })
  audiencesNamedByScopes(aud, scope)
  let exp = parent.exp
  if (req.ttlSec !== undefined) {
    exp = nowSec + req.ttlSec
    if (exp > parent.exp) throw widen('ttlSec', 'the child would outlive its parent', { exp, parentExp: parent.exp })
  }
  const caveats = narrowCaveats(parent.ron, req.caveats)
  const plan: ChildPlan = { sub: parent.sub, aud, scope, exp }
  if (parent.nbf !== undefined) plan.nbf = parent.nbf
  if (caveats !== undefined) plan.caveats = caveats
  return plan
}

/**
 * Decides a service token for a node (SPEC.md §5, "Service-call scopes"): at most the service-call
 * scopes, one audience that the scopes name, and `storage:write` only with a `maxBytes` caveat of
 * `writeMaxBytes`. `allowed` (an enrolment's scopes, `*` = all service-call scopes) narrows further.
 * @throws {@link ForbiddenError} `missing_scope` for a scope outside the service-call scopes or
 *   `allowed`; `widen` (`aud`) for an audience the scopes do not name
 */
export function servicePlan(req: { aud: string; scope: readonly string[] }, writeMaxBytes: number, allowed: readonly string[] = ['*']): { scope: string[]; caveats?: Caveats } {
  const scope = uniq(req.scope)
  for (const s of scope) {
    if (!isServiceCallScope(s)) throw new ForbiddenError(`scope ${s} is not a service-call scope`, { details: { reason: 'missing_scope', scope: s } })
    if (!allowed.includes('*') && !allowed.includes(s)) throw new ForbiddenError(`scope ${s} is not allowed for this node`, { details: { reason: 'missing_scope', scope: s } })
  }
  audiencesNamedByScopes([req.aud], scope)
  return scope.includes('storage:write') ? { scope, caveats: { maxBytes: writeMaxBytes } } : { scope }
}
