/**
 * `createPassportClient(transport, options)`: a typed client of passport's HTTP API over any
 * {@link Transport}. Errors come back as core's typed errors (the SPEC envelope).
 *
 * @module
 */

import { errorFromEnvelope, resolveToken, type RevocationFeedPage, type TokenSource, type Transport } from '@ron/core'
import type { AttenuateBody, EnrolBody, IssueBody, IssuedToken, RevokeResult, TokenBody, VerifyResult } from './dto.js'
import type { EnrolledNode } from './nodes.js'
import type { PublishedJwk } from './keyring.js'
import type { KeyringSummary } from './service.js'

/** Options of {@link createPassportClient}. */
export interface PassportClientOptions {
  /** Bearer token for issue, revoke, rotate and nodes (a string or a function called per request). @default none */
  token?: TokenSource
  /** Transport target name. @default 'passport' */
  target?: string
  /** Deadline of each call. @default 10000 */
  timeoutMs?: number
}

/** The typed passport client. Every method takes an optional `AbortSignal`. */
export interface PassportClient {
  /** `POST /v1/passport/issue` (scope `passport:issue`). */
  issue(req: IssueBody, signal?: AbortSignal): Promise<IssuedToken>
  /** `POST /v1/passport/verify`: never throws for an invalid token, answers `{valid:false, reason}`. */
  verify(token: string, aud?: string, signal?: AbortSignal): Promise<VerifyResult>
  /** `POST /v1/passport/verify/batch`. */
  verifyBatch(tokens: Array<{ token: string; aud?: string }>, signal?: AbortSignal): Promise<VerifyResult[]>
  /** `POST /v1/passport/attenuate`: no bearer token, the parent is in the body. */
  attenuate(req: AttenuateBody, signal?: AbortSignal): Promise<IssuedToken>
  /** `POST /v1/passport/revoke` by jti or token (scope `passport:revoke`). */
  revoke(req: { jti: string } | { token: string }, signal?: AbortSignal): Promise<RevokeResult>
  /** `GET /v1/passport/revocations?since=`. */
  revocations(since?: number, signal?: AbortSignal): Promise<RevocationFeedPage>
  /** `GET /v1/passport/keys`. */
  keys(signal?: AbortSignal): Promise<{ keys: PublishedJwk[] }>
  /** `POST /v1/passport/rotate` (scope `passport:admin`). */
  rotate(signal?: AbortSignal): Promise<KeyringSummary>
  /** `POST /v1/passport/nodes` (scope `passport:admin`). */
  enrolNode(req: EnrolBody, signal?: AbortSignal): Promise<EnrolledNode>
  /** `POST /v1/passport/token`: a node's client assertion for a service token (no bearer token). */
  exchange(req: TokenBody, signal?: AbortSignal): Promise<IssuedToken>
}

/**
 * Creates a passport client.
 *
 * @example
 * ```ts
 * const passport = createPassportClient(transport, { token: adminToken })
 * const { token } = await passport.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
 * const child = await passport.attenuate({ token, caveats: { maxBytes: 1_000_000 } })
 * await passport.revoke({ token })
 * ```
 */
export function createPassportClient(transport: Transport, options: PassportClientOptions = {}): PassportClient {
  const target = options.target ?? 'passport'
  const timeoutMs = options.timeoutMs ?? 10_000

  async function call<T>(method: 'GET' | 'POST', path: string, body: unknown, auth: boolean, signal: AbortSignal | undefined): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (auth) {
      const t = await resolveToken(options.token)
      if (t !== undefined) headers['authorization'] = `Bearer ${t}`
    }
    const res = await transport.request(target, {
      method,
      path,
      headers,
      timeoutMs,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal === undefined ? {} : { signal }),
    })
    if (res.status >= 400) {
      let env: unknown
      try {
        env = await res.json()
      } catch {
        env = undefined
      }
      const ra = Number(res.headers['retry-after'])
      throw errorFromEnvelope(res.status, env, Number.isFinite(ra) ? ra * 1000 : undefined)
    }
    return res.json<T>()
  }

  return {
    issue: (req, signal) => call('POST', '/v1/passport/issue', req, true, signal),
    verify: (token, aud, signal) => call('POST', '/v1/passport/verify', aud === undefined ? { token } : { token, aud }, false, signal),
    verifyBatch: async (tokens, signal) => (await call<{ results: VerifyResult[] }>('POST', '/v1/passport/verify/batch', { tokens }, false, signal)).results,
    attenuate: (req, signal) => call('POST', '/v1/passport/attenuate', req, false, signal),
    revoke: (req, signal) => call('POST', '/v1/passport/revoke', req, true, signal),
    revocations: (since = 0, signal) => call('GET', `/v1/passport/revocations?since=${since}`, undefined, false, signal),
    keys: (signal) => call('GET', '/v1/passport/keys', undefined, false, signal),
    rotate: (signal) => call('POST', '/v1/passport/rotate', undefined, true, signal),
    enrolNode: (req, signal) => call('POST', '/v1/passport/nodes', req, true, signal),
    exchange: (req, signal) => call('POST', '/v1/passport/token', req, false, signal),
  }
}
