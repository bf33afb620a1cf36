/**
 * Write routes: `POST /registry/proposals`, `POST /registry/approvals/:proposalId`,
 * `POST /registry/commit/:proposalId`, `POST /registry/supersede`, and `GET /registry/proposals/:id`.
 *
 * @module
 */

import { z } from 'zod'
import { ConflictError, MalformedError, TimeoutError } from '@ron/core'
import type { Route, RouteContext } from '@ron/core'
import { descriptorSchema, descriptorSetSchema, plainDescriptorSet, type DescriptorSet } from '../descriptors.js'
import { APPROVAL_SIG_PATTERN, type Approval } from '../signers.js'
import type { CommitGate } from '../committer.js'
import { plainMembers } from '../plain.js'
import type { RouteDeps } from './context.js'

/** Body of `POST /registry/proposals`. */
export const proposeBodySchema = z.strictObject({
  payload: descriptorSetSchema,
  /** Fail with 409 ChainMismatch unless HEAD is at this version. */
  baseVersion: z.number().int().nonnegative().optional(),
})

/** Body of `POST /registry/approvals/:proposalId`. */
export const approveBodySchema = z.strictObject({
  signerId: z.string().min(1).max(128),
  sig: z.string().regex(APPROVAL_SIG_PATTERN, 'expected a base64url Ed25519 signature (86 characters)'),
})

/**
 * Optional body of `POST /registry/commit/:proposalId`: approvals to record before the commit, as
 * if each had been sent to `POST /registry/approvals/:proposalId` (the token then needs
 * `registry:approve` too). Saves a round trip per approval; an empty body commits as before.
 */
export const commitBodySchema = z.strictObject({
  approvals: z.array(approveBodySchema).min(1).max(64),
})

/** Body of `POST /registry/supersede`. */
export const supersedeBodySchema = z.strictObject({
  version: z.number().int().positive(),
  reason: z.string().min(1).max(1024),
  /** The descriptor set after the supersede. @default HEAD's items */
  items: z.array(descriptorSchema).max(4096).optional(),
})

/** The members of an approval body. */
const APPROVAL_MEMBERS = ['signerId', 'sig'] as const

/**
 * An approval body exactly as {@link approveBodySchema} accepts it (a plain object with the two
 * members and nothing else, an id of 1–128 characters, an 86-character base64url signature),
 * checked without zod: anything else goes to the schema, which refuses it with its own error.
 */
function plainApproval(v: unknown): Approval | undefined {
  if (plainMembers(v, APPROVAL_MEMBERS) !== 2) return undefined
  const { signerId, sig } = v as Record<string, unknown>
  if (typeof signerId !== 'string' || signerId.length < 1 || signerId.length > 128 || typeof sig !== 'string' || !APPROVAL_SIG_PATTERN.test(sig)) return undefined
  return { signerId, sig }
}

/** {@link approveBodySchema} with the common body checked directly (an approval per request is the hot write). */
const approveBody = { parse: (v: unknown): Approval => plainApproval(v) ?? approveBodySchema.parse(v) }

/** {@link commitBodySchema} likewise: `{approvals: [1–64 approvals]}` checked directly, anything else by the schema. */
const commitBody = {
  parse: (v: unknown): { approvals: Approval[] } => {
    if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
      const keys = Object.keys(v)
      const list = (v as { approvals?: unknown }).approvals
      if (keys.length === 1 && keys[0] === 'approvals' && Array.isArray(list) && list.length >= 1 && list.length <= 64) {
        const approvals: Approval[] = []
        for (const a of list) {
          const ok = plainApproval(a)
          if (ok === undefined) return commitBodySchema.parse(v)
          approvals.push(ok)
        }
        return { approvals }
      }
    }
    return commitBodySchema.parse(v)
  },
}

/**
 * {@link proposeBodySchema} with the common body — `{payload, baseVersion?}` whose payload
 * {@link plainDescriptorSet} recognises — checked directly, anything else by the schema. @internal
 */
export const proposeBody = {
  parse: (v: unknown): z.infer<typeof proposeBodySchema> => {
    if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
      const o = v as Record<string, unknown>
      let n = 0
      for (const k in o) {
        if (k !== 'payload' && k !== 'baseVersion') return proposeBodySchema.parse(v)
        n++
      }
      const payload = plainDescriptorSet(o['payload'])
      const base = o['baseVersion']
      if (payload !== undefined) {
        if (n === 1) return { payload }
        if (n === 2 && typeof base === 'number' && Number.isSafeInteger(base) && base >= 0) return { payload, baseVersion: base }
      }
    }
    return proposeBodySchema.parse(v)
  },
}

/** Header carrying the caller's remaining deadline in ms. */
export const DEADLINE_HEADER = 'x-deadline-ms'
const MAX_DEADLINE_MS = 60_000

function deadlineOf(ctx: RouteContext, fallback: number): number {
  const raw = ctx.req.headers[DEADLINE_HEADER]
  const v = Array.isArray(raw) ? raw[0] : raw
  if (v === undefined) return fallback
  if (!/^[0-9]{1,9}$/.test(v)) throw new MalformedError(`${DEADLINE_HEADER} must be a number of milliseconds`, { details: { field: DEADLINE_HEADER } })
  return Math.min(Math.max(1, Number(v)), MAX_DEADLINE_MS)
}

/**
 * The gate {@link commitWithin} hands the Committer: gone once the deadline passed or the client
 * went away. A class, not an object literal with getters: such a literal's getters are fresh
 * closures held by accessor pairs that V8 allocates in the old generation, where they stay until
 * a full GC, so each commit request's whole graph survived every scavenge (docs/DESIGN.md).
 */
class DeadlineGate implements CommitGate {
  timedOut: TimeoutError | undefined = undefined
  gone: Error | undefined = undefined
  get aborted(): boolean {
    return this.timedOut !== undefined || this.gone !== undefined
  }
  get reason(): Error | undefined {
    return this.timedOut ?? this.gone
  }
}

/**
 * `withDeadline` for a commit, without the inner AbortController it makes per call (~50k
 * instructions with its signal, of a 5M-instruction commit cycle) nor the request's signal
 * (`ctx.onAbort` hears of a client gone without one): a timer answers 504 `Timeout` at the
 * deadline (counted in `io_timeouts_total{op="commit"}`) while a commit being written completes;
 * the gate the Committer checks when it takes the command up says gone once the deadline passed
 * or the client went away.
 */
function commitWithin<T>(d: RouteDeps, ms: number, ctx: Pick<RouteContext, 'onAbort'>, run: (gate: CommitGate) => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const gate = new DeadlineGate()
    let settled = false
    // The client gone (or the host draining past its deadline) answers at once, as withDeadline
    // does; one already gone (the hook calls back at once) is refused before anything is queued.
    let listening = false
    const unlisten = ctx.onAbort((reason) => {
      gate.gone = reason
      if (listening && settle()) reject(reason)
    })
    if (gate.gone !== undefined) {
      reject(gate.gone)
      return
    }
    listening = true
    const settle = (): boolean => {
      if (settled) return false
      settled = true
      d.clock.clearTimeout(timer)
      unlisten()
      return true
    }
    const timer = d.clock.setTimeout(() => {
      const timedOut = new TimeoutError('commit: deadline exceeded', { details: { op: 'commit' } })
      gate.timedOut = timedOut
      if (!settle()) return
      d.metrics.inc('io_timeouts_total', { op: 'commit' })
      reject(timedOut)
    }, ms)
    timer.unref?.()
    run(gate).then(
      (v) => {
        if (settle()) resolve(v)
      },
      (e: Error) => {
        if (settle()) reject(e)
      },
    )
  })
}

/** True when the request carries a body (a length above zero, or chunked). */
function hasBody(ctx: RouteContext): boolean {
  const h = ctx.req.headers
  const len = h['content-length']
  if (len !== undefined) return len !== '0'
  return h['transfer-encoding'] !== undefined
}

/** The write routes. */
export function writeRoutes(d: RouteDeps): Route[] {
  return [
    {
      method: 'POST',
      path: '/registry/proposals',
      scope: 'registry:propose',
      async handler(ctx) {
        d.writeGate()
        const body = await ctx.json(proposeBody)
        if (body.payload.meta?.supersedes !== undefined) {
          throw new MalformedError('payload.meta.supersedes is set only by POST /registry/supersede', { details: { field: 'payload.meta.supersedes' } })
        }
        const p = await d.committer.propose(body.payload, body.baseVersion)
        return { status: 202, json: { proposalId: p.proposalId, payloadB3: p.payloadB3, baseVersion: p.baseVersion, expiresAt: p.expiresAt } }
      },
    },
    {
      method: 'GET',
      path: '/registry/proposals/:id',
      async handler(ctx) {
        const p = await d.committer.get(ctx.params['id'] ?? '')
        return { status: 200, headers: { 'cache-control': 'no-store' }, json: p }
      },
    },
    {
      method: 'POST',
      path: '/registry/approvals/:proposalId',
      scope: 'registry:approve',
      async handler(ctx) {
        d.writeGate()
        const body = await ctx.json(approveBody)
        const r = await d.committer.approve(ctx.params['proposalId'] ?? '', body)
        return { status: 200, json: r }
      },
    },
    {
      method: 'POST',
      path: '/registry/commit/:proposalId',
      scope: 'registry:commit',
      async handler(ctx) {
        d.writeGate()
        const ms = deadlineOf(ctx, d.config().commitTimeoutMs)
        const id = ctx.params['proposalId'] ?? ''
        let approvals: Approval[] | undefined
        if (hasBody(ctx)) {
          approvals = (await ctx.json(commitBody)).approvals
          await d.authenticate(ctx.req, 'registry:approve')
        }
        // The deadline races the reply: a commit already being written completes (a retry
        // returns it), one still queued when the deadline passes is never written.
        const r = await commitWithin(d, ms, ctx, (gate) => d.committer.commit(id, gate, approvals))
        return { status: 201, json: r }
      },
    },
    {
      method: 'POST',
      path: '/registry/supersede',
      scope: 'registry:admin',
      async handler(ctx) {
        d.writeGate()
        const body = await ctx.json(supersedeBodySchema)
        const head = d.log.head()
        if (body.version > head.version) throw new MalformedError(`version ${body.version} is beyond HEAD ${head.version}`, { details: { field: 'version' } })
        const already = d.log.supersededBy(body.version)
        if (already !== undefined) throw new ConflictError(`version ${body.version} is already superseded by ${already.version}`, { details: { supersededBy: already } })
        let items = body.items
        if (items === undefined) {
          const cur = head.version === 0 ? undefined : await d.log.read(head.version)
          items = cur !== undefined && 'entry' in cur ? cur.entry.payload.items : []
        }
        const payload: DescriptorSet = descriptorSetSchema.parse({ schemaVersion: 1, items, meta: { supersedes: { version: body.version, reason: body.reason } } })
        const p = await d.committer.propose(payload, head.version)
        return { status: 202, json: { proposalId: p.proposalId, payloadB3: p.payloadB3, baseVersion: p.baseVersion, expiresAt: p.expiresAt } }
      },
    },
  ]
}
