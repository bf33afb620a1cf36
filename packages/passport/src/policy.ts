/**
 * What may be issued: the policy check for `issue`, and the narrowing rules of `attenuate`
 * (a child can never carry more than its parent). Both are pure functions over immutable data.
 *
 * @module
 */

import { ForbiddenError, MalformedError, NotReadyError, isScope, type Caveats, type Claims } from '@ron/core'
import type { Policy } from './config.js'

/** Caveats as a request carries them (the core catalog). */
export interface CaveatsInput {
  maxBytes?: number | undefined
  pathPrefix?: string | undefined
  methods?: string[] | undefined
}

/** Drops absent members: the `ron` claim carries only the caveats that are set. */
export function toCaveats(c: CaveatsInput): Caveats {
  const out: Caveats = {}
  if (c.maxBytes !== undefined) out.maxBytes = c.maxBytes
  if (c.pathPrefix !== undefined) out.pathPrefix = c.pathPrefix
  if (c.methods !== undefined) out.methods = [...c.methods]
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

/** The decided shape of a token to sign. */
export interface TokenPlan {
  sub: string
  aud: string[]
  scope: string[]
  ttlSec: number
  caveats?: Caveats
}

const uniq = (xs: readonly string[]): string[] => [...new Set(xs)]

function forbidden(message: string, field: string, extra: Record<string, unknown> = {}): ForbiddenError {
  return new ForbiddenError(message, { details: { reason: 'policy', field, ...extra } })
}

/**
 * Applies the policy to a request from `caller` (the issuing token's `sub`).
 * @throws {@link NotReadyError} (`no_policy`) without a policy — passport never issues without one
 * @throws {@link MalformedError} for a scope outside the catalog
 * @throws {@link ForbiddenError} (`details.reason: 'policy'`, `field`) when the policy does not allow it
 */
export function checkIssue(policy: Policy | undefined, caller: string, req: IssueRequest): TokenPlan {
  if (policy === undefined) throw new NotReadyError('passport has no issuance policy', { details: { reason: 'no_policy' }, retryAfterMs: 1000 })
  // Own keys only: a caller named `constructor` or `__proto__` must not find Object.prototype's members.
  const own = (k: string): Policy['callers'][string] | undefined => (Object.hasOwn(policy.callers, k) ? policy.callers[k] : undefined)
  const rule = own(caller) ?? own('*')
  if (rule === undefined) throw forbidden(`the policy lets ${caller} issue nothing`, 'sub', { caller })
  const scope = uniq(req.scope)
  for (const s of scope) {
    if (!isScope(s)) throw new MalformedError(`unknown scope '${s}'`, { details: { field: 'scope', scope: s } })
    if (!rule.scopes.includes('*') && !rule.scopes.includes(s)) throw forbidden(`the policy does not let ${caller} issue scope ${s}`, 'scope', { scope: s })
  }
  const aud = uniq(req.aud)
  for (const a of aud) {
    if (!rule.audiences.includes('*') && !rule.audiences.includes(a)) throw forbidden(`the policy does not let ${caller} issue for audience ${a}`, 'aud', { aud: a })
  }
  const max = Math.min(policy.maxTtlSec, rule.maxTtlSec ?? Infinity)
  const ttlSec = req.ttlSec ?? Math.min(policy.defaultTtlSec, max)
  if (ttlSec > max) throw forbidden(`ttlSec ${ttlSec} is over the policy's maximum ${max}`, 'ttlSec', { maxTtlSec: max })
  const caveats = req.caveats === undefined ? undefined : toCaveats(req.caveats)
  if (caveats !== undefined) {
    for (const name of Object.keys(caveats)) {
      if (!policy.caveats.includes(name)) throw forbidden(`the policy does not allow caveat ${name}`, 'caveats', { caveat: name })
    }
  }
  return { sub: req.sub, aud, scope, ttlSec, ...(caveats === undefined || Object.keys(caveats).length === 0 ? {} : { caveats }) }
}

/** A narrowing request: every field optional (omitted = same as the parent). */
export interface AttenuateRequest {
  scope?: string[] | undefined
  aud?: string[] | undefined
  /** Lifetime from now; the child's `exp` must not pass the parent's. */
  ttlSec?: number | undefined
  caveats?: CaveatsInput | undefined
}

/** The child's claims as decided by {@link narrow} (`iat`, `jti`, `prf` are added at signing). */
export interface ChildPlan {
  sub: string
  aud: string[]
  scope: string[]
  exp: number
  nbf?: number
  caveats?: Caveats
}

function widen(field: string, message: string, extra: Record<string, unknown> = {}): ForbiddenError {
  return new ForbiddenError(message, { details: { reason: 'widen', field, ...extra } })
}

/** True when path prefix `child` stays inside `parent` (the same boundary rule as `checkCaveats`). */
export function prefixWithin(child: string, parent: string): boolean {
  return child === parent || (child.startsWith(parent) && (parent.endsWith('/') || child.charAt(parent.length) === '/'))
}

/**
 * Narrows `parent` by `req` at `nowSec`. The child keeps the parent's `sub`, a subset of its
 * scopes and audiences, an `exp` no later than the parent's, and every parent caveat at least as
 * tight (a caveat the parent has can only be tightened, never dropped).
 * @throws {@link ForbiddenError} (`details.reason: 'widen'`, `field`) for anything wider
 */
export function narrow(parent: Claims, req: AttenuateRequest, nowSec: number): ChildPlan {
  const scope = req.scope === undefined ? [...parent.scope] : uniq(req.scope)
  for (const s of scope) if (!parent.scope.includes(s)) throw widen('scope', `scope ${s} is not in the parent token`, { scope: s })
  const aud = req.aud === undefined ? [...parent.aud] : uniq(req.aud)
  if (aud.length === 0) throw new MalformedError('aud must name at least one service', { details: { field: 'aud' } })
  for (const a of aud) if (!parent.aud.includes(a)) throw widen('aud', `audience ${a} is not in the parent token`, { aud: a })
  let exp = parent.exp
  if (req.ttlSec !== undefined) {
    exp = nowSec + req.ttlSec
    if (exp > parent.exp) throw widen('ttlSec', 'the child would outlive its parent', { exp, parentExp: parent.exp })
  }

  const p = parent.ron ?? {}
  const c = toCaveats(req.caveats ?? {})
  const out: Caveats = {}
  // maxBytes: the smaller wins; a child may add one.
  if (c.maxBytes !== undefined) {
    if (p.maxBytes !== undefined && c.maxBytes > p.maxBytes) throw widen('caveats.maxBytes', 'maxBytes is larger than the parent', { maxBytes: p.maxBytes })
    out.maxBytes = c.maxBytes
  } else if (p.maxBytes !== undefined) out.maxBytes = p.maxBytes
  // methods: a subset (case-insensitive).
  if (c.methods !== undefined) {
    const up = uniq(c.methods.map((m) => m.toUpperCase()))
    if (p.methods !== undefined) {
      const allowed = new Set(p.methods.map((m) => m.toUpperCase()))
      for (const m of up) if (!allowed.has(m)) throw widen('caveats.methods', `method ${m} is not allowed by the parent`, { method: m })
    }
    out.methods = up
  } else if (p.methods !== undefined) out.methods = [...p.methods]
  // pathPrefix: inside the parent's.
  if (c.pathPrefix !== undefined) {
    if (p.pathPrefix !== undefined && !prefixWithin(c.pathPrefix, p.pathPrefix)) {
      throw widen('caveats.pathPrefix', 'pathPrefix is outside the parent prefix', { pathPrefix: p.pathPrefix })
    }
    out.pathPrefix = c.pathPrefix
  } else if (p.pathPrefix !== undefined) out.pathPrefix = p.pathPrefix

  const plan: ChildPlan = { sub: parent.sub, aud, scope, exp }
  if (parent.nbf !== undefined) plan.nbf = parent.nbf
  if (Object.keys(out).length > 0) plan.caveats = out
  return plan
}
