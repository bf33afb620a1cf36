/**
 * Token routes: issue, attenuate, the node token exchange, verify and verify/batch.
 *
 * @module
 */

import { ForbiddenError, NotReadyError, UnauthorizedError, isRonError, type Claims, type Reply, type Route } from '@ron/core'
import { attenuateBodySchema, issueBodySchema, tokenBodySchema, verifyBatchSchema, verifyBodyParser, type VerifyResult } from '../dto.js'
import { checkIssue, narrow, servicePlan } from '../policy.js'
import type { PassportContext } from './context.js'

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' })

/** The routes that make and check tokens. @internal */
export function tokenRoutes(ctx: PassportContext): Route[] {
  const nowSec = (): number => Math.floor(ctx.clock.now() / 1000)
  const batchSchema = verifyBatchSchema(ctx.cfg.maxBatch)

  // The registered histogram itself: observing it skips the sink's per-call lookup (hot route).
  const verifyLatency = ctx.host.metrics.histogram('passport_verify_latency_seconds', 'Latency of verify (signing, verification, revocation work).')

  async function verifyOne(token: string, aud: string | undefined): Promise<VerifyResult> {
    const started = ctx.clock.now()
    try {
      const claims = await ctx.verifyBodyToken(token, aud)
      return { valid: true, claims }
    } catch (e) {
      if (isRonError(e, 'Unauthorized') || isRonError(e, 'Forbidden')) return { valid: false, reason: typeof e.details['reason'] === 'string' ? e.details['reason'] : 'invalid' }
      throw e
    } finally {
      verifyLatency.observe((ctx.clock.now() - started) / 1000)
    }
  }

  // The verify reply, serialised once per verified token: the verifier's cache hands back the
  // same frozen claims object on every use of a token, so its reply text is keyed by that object
  // and goes when the verifier evicts it (a WeakMap holds nothing alive). Refusals are keyed by
  // their reason (a short fixed list; capped anyway).
  const validReplies = new WeakMap<Claims, string>()
  const refusedReplies = new Map<string, string>()
  function verifyReply(r: VerifyResult): Reply {
    let text: string | undefined
    if (r.valid) {
      text = validReplies.get(r.claims)
      if (text === undefined) {
        text = JSON.stringify(r)
        if (Object.isFrozen(r.claims)) validReplies.set(r.claims, text)
      }
    } else {
      text = refusedReplies.get(r.reason)
      if (text === undefined) {
        text = JSON.stringify(r)
        if (refusedReplies.size < 64) refusedReplies.set(r.reason, text)
      }
    }
    return { status: 200, headers: JSON_HEADERS, body: text }
  }

  return [
    {
      method: 'POST',
      path: '/v1/passport/issue',
      scope: 'passport:issue',
      async handler(c) {
        const body = await c.json(issueBodySchema)
        // Decided on what the verified caller's token grants (the policy entry for its sub only
        // narrows), with the policy snapshot taken once, here: a reload during signing does not
        // change this decision.
        const caller = c.auth!
        const plan = checkIssue(ctx.policy(), caller, body, nowSec())
        const issued = await ctx.submitIssue((signal) => ctx.mintChild(caller.jti, plan, 'issue', signal), c.signal)
        return { status: 200, json: issued }
      },
    },
    {
      method: 'POST',
      path: '/v1/passport/attenuate',
      // Holding the parent is the right to narrow it (SPEC.md section 5): no bearer token, no scope.
      public: true,
      async handler(c) {
        const body = await c.json(attenuateBodySchema)
        let parent
        try {
          parent = await ctx.verifyBodyToken(body.token)
        } catch (e) {
          if (isRonError(e, 'Unauthorized')) throw new UnauthorizedError(`parent token refused: ${e.message}`, { details: { ...e.details, field: 'token' } })
          throw e
        }
        const plan = narrow(parent, body, nowSec())
        // Inside the worker the child is adopted under its parent before signing: a revocation
        // accepted while this job waited (or racing it) wins (see revocations.ts).
        const issued = await ctx.submitIssue((signal) => ctx.mintChild(parent.jti, plan, 'attenuate', signal), c.signal)
        return { status: 200, json: issued }
      },
    },
    {
      method: 'POST',
      path: '/v1/passport/token',
      // Authenticated by the client assertion in the body, not by a bearer token.
      public: true,
      async handler(c) {
        const body = await c.json(tokenBodySchema)
        const policy = ctx.policy()
        if (policy === undefined) throw new NotReadyError('passport has no issuance policy', { details: { reason: 'no_policy' }, retryAfterMs: 1000 })
        const node = ctx.nodes.check(body.assertion, [ctx.cfg.id, ctx.cfg.issuer], ctx.cfg.rotation.clockToleranceSec)
        // A node key yields at most the service-call scopes (SPEC.md §5), and only those it is enrolled for.
        const plan = servicePlan(body, ctx.host.config.get().serviceWriteMaxBytes, node.scopes)
        if (!node.audiences.includes('*') && !node.audiences.includes(body.aud)) {
          throw new ForbiddenError(`node ${node.nodeId} is not enrolled for audience ${body.aud}`, { details: { reason: 'policy', field: 'aud' } })
        }
        const ttl = Math.min(ctx.cfg.serviceTokenTtlSec, policy.maxTtlSec)
        const issued = await ctx.submitIssue(
          (signal) =>
            ctx.issuer.sign(
              { sub: `node:${node.nodeId}`, aud: [body.aud], scope: plan.scope, exp: nowSec() + ttl, ...(plan.caveats === undefined ? {} : { caveats: plan.caveats }) },
              'service',
              signal,
            ),
          c.signal,
        )
        return { status: 200, json: issued }
      },
    },
    {
      method: 'POST',
      path: '/v1/passport/verify',
      public: true,
      async handler(c) {
        const body = await c.json(verifyBodyParser)
        return verifyReply(await verifyOne(body.token, body.aud))
      },
    },
    {
      method: 'POST',
      path: '/v1/passport/verify/batch',
      public: true,
      async handler(c) {
        const body = await c.json(batchSchema)
        const results: VerifyResult[] = []
        // One bad token never fails the batch: each is answered on its own.
        for (const t of body.tokens) results.push(await verifyOne(t.token, t.aud))
        return { status: 200, json: { results } }
      },
    },
  ]
}
