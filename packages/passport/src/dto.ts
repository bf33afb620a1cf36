/**
 * Wire DTOs of passport's API (SPEC.md section 4: strict, camelCase; JWT claim names where a
 * standard fixes them). Unknown fields are refused with 400 naming the field.
 *
 * @module
 */

import { z } from 'zod'
import { SERVICE_CALL_SCOPES, isNormalizedPath, isValidName, type Claims } from '@ron/core'

const scopeName = z.string().min(1).regex(/^\S+$/, 'a scope has no whitespace')
const serviceId = z.string().min(1).regex(/^\S+$/, 'an audience has no whitespace')

/** Caveats a request may set (the core catalog). */
export const caveatsSchema = z
  .object({
    maxBytes: z.number().int().nonnegative().optional(),
    pathPrefix: z.string().refine(isNormalizedPath, 'a pathPrefix is a normalised path: starts with /, no . or .. segment, no //, no encoded dots or slashes').optional(),
    methods: z.array(z.string().min(1).regex(/^[A-Za-z]+$/)).min(1).optional(),
    namePrefix: z.string().refine(isValidName, 'a namePrefix is a name: lowercase DNS labels joined by dots').optional(),
  })
  .strict()

/** `POST /v1/passport/issue`. */
export const issueBodySchema = z
  .object({
    sub: z.string().min(1),
    aud: z.array(serviceId).min(1),
    scope: z.array(scopeName).min(1),
    ttlSec: z.number().int().positive().optional(),
    caveats: caveatsSchema.optional(),
  })
  .strict()
/** Body of `POST /v1/passport/issue`. */
export type IssueBody = z.infer<typeof issueBodySchema>

/** What issuing, attenuating and the token exchange answer. */
export interface IssuedToken {
  token: string
  jti: string
  kid: string
  /** JWT seconds. */
  exp: number
}

/** `POST /v1/passport/verify` and each item of the batch. */
export const verifyBodySchema = z.object({ token: z.string(), aud: serviceId.optional() }).strict()
/** Body of `POST /v1/passport/verify`. */
export type VerifyBody = z.infer<typeof verifyBodySchema>

const NO_WHITESPACE = /^\S+$/

/**
 * `verifyBodySchema` with a fast path for the hot route: a body that is exactly `{token: string,
 * aud?: non-empty string without whitespace}` is accepted as is; anything else goes through the
 * zod schema, so every refusal (unknown field, wrong type) is zod's, naming the field. @internal
 */
export const verifyBodyParser: { parse(value: unknown): VerifyBody } = {
  parse(value) {
    if (isPlainVerifyBody(value)) return value
    return verifyBodySchema.parse(value)
  },
}

/** Whether `v` is a well-formed verify body (what the schema would return unchanged). @internal */
export function isPlainVerifyBody(v: unknown): v is VerifyBody {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const o = v as Record<string, unknown>
  if (typeof o['token'] !== 'string' || !Object.hasOwn(o, 'token')) return false
  let n = 1
  if (Object.hasOwn(o, 'aud')) {
    const aud = o['aud']
    if (typeof aud !== 'string' || !NO_WHITESPACE.test(aud)) return false
    n = 2
  }
  // Own enumerable keys only (a JSON `"__proto__"` key is one): any other key goes to zod.
  return Object.keys(o).length === n
}

/** `POST /v1/passport/verify/batch`. */
export const verifyBatchSchema = (max: number) => z.object({ tokens: z.array(verifyBodySchema).max(max) }).strict()

/** The answer of `verify`: always 200. */
export type VerifyResult = { valid: true; claims: Claims } | { valid: false; reason: string }

/** `POST /v1/passport/attenuate`. */
export const attenuateBodySchema = z
  .object({
    token: z.string().min(1),
    scope: z.array(scopeName).min(1).optional(),
    aud: z.array(serviceId).min(1).optional(),
    ttlSec: z.number().int().positive().optional(),
    caveats: caveatsSchema.optional(),
  })
  .strict()
/** Body of `POST /v1/passport/attenuate`. */
export type AttenuateBody = z.infer<typeof attenuateBodySchema>

/** `POST /v1/passport/revoke`: exactly one of `jti` and `token`. */
export const revokeBodySchema = z
  .object({ jti: z.string().min(1).optional(), token: z.string().min(1).optional() })
  .strict()
  .refine((b) => (b.jti === undefined) !== (b.token === undefined), { message: 'give exactly one of jti and token', path: ['jti'] })
/** Body of `POST /v1/passport/revoke`. */
export type RevokeBody = z.infer<typeof revokeBodySchema>

/** What `revoke` answers (202). */
export interface RevokeResult {
  /** The feed seq covering the revocation: a verifier synced past it refuses the token. */
  seq: number
  /** Every jti revoked (the token and its attenuated subtree). */
  revoked: string[]
}

/** `POST /v1/passport/nodes`. */
export const enrolBodySchema = z
  .object({
    nodeId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a node id is 1–128 of [A-Za-z0-9._-]'),
    publicJwk: z
      .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string().min(1), kid: z.string().optional(), alg: z.literal('EdDSA').optional(), use: z.literal('sig').optional() })
      .strict(),
    /** At most the service-call scopes (SPEC.md §5); `*` = all of them. */
    scopes: z.array(z.enum(['*', ...SERVICE_CALL_SCOPES] as [string, ...string[]])).min(1),
    audiences: z.array(serviceId).min(1).default(['*']),
  })
  .strict()
/** Body of `POST /v1/passport/nodes`. */
export type EnrolBody = z.input<typeof enrolBodySchema>

/** `POST /v1/passport/token`: a node's client assertion for a service token. */
export const tokenBodySchema = z
  .object({
    assertion: z.string().min(1),
    aud: serviceId,
    scope: z.array(scopeName).min(1),
  })
  .strict()
/** Body of `POST /v1/passport/token`. */
export type TokenBody = z.infer<typeof tokenBodySchema>
