/**
 * Where interop gets the short-lived service token it presents to storage: `storage:write` with
 * `aud: storage` — for webhook receipts, and as the parent that upload capabilities are attenuated
 * from (interop needs no `passport:*` scope, SPEC §5 "Service-call scopes"). Shaped like core's
 * token provider (`createTokenProvider(...)` → `{ token({aud, scope}, signal) }`), so a host passes
 * that straight in; a static token or a function is accepted too.
 *
 * @module
 */

/** What interop asks for: an audience and the scopes the call needs. */
export interface ServiceTokenRequest {
  aud: string
  scope: string[]
}

/** A token provider (core's `createTokenProvider` fits). */
export interface ServiceTokens {
  token(req: ServiceTokenRequest, signal?: AbortSignal): Promise<string>
}

/** Anything interop accepts as its token source (core's `OutgoingTokens` fits: its `token()` may answer synchronously). */
export type ServiceTokenSource = ServiceTokens | { token(req: ServiceTokenRequest, signal?: AbortSignal): string | Promise<string> } | string | ((req: ServiceTokenRequest) => string | Promise<string>)

/**
 * Normalises a {@link ServiceTokenSource} into a provider (a static token or a function too: pass
 * the result as the runtime's `tokens`); `undefined` stays `undefined`.
 * @example
 * ```ts
 * await createInteropService(config, transport, { tokens: toServiceTokens(process.env.INTEROP_TOKEN!) })
 * ```
 */
export function toServiceTokens(src: ServiceTokenSource): ServiceTokens
export function toServiceTokens(src: ServiceTokenSource | undefined): ServiceTokens | undefined
export function toServiceTokens(src: ServiceTokenSource | undefined): ServiceTokens | undefined {
  if (src === undefined) return undefined
  if (typeof src === 'string') return { token: () => Promise.resolve(src) }
  if (typeof src === 'function') return { token: async (req) => src(req) }
  return { token: async (req, signal) => src.token(req, signal) }
}
