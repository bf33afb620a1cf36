/**
 * Masking secrets before configuration is logged or printed.
 *
 * @module
 */

/** The replacement for redacted values. */
export const REDACTED = '[redacted]'

const SECRET_WORDS = new Set([
  'token',
  'tokens',
  'secret',
  'secrets',
  'password',
  'passwd',
  'passphrase',
  'credential',
  'credentials',
  'authorization',
  'cookie',
  'cookies',
  'key',
])

/** True when the last word of a camelCase, snake_case or kebab-case key names a secret. */
function isSecretKey(k: string): boolean {
  const words = k
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_-]+/)
  return SECRET_WORDS.has(words[words.length - 1] ?? '')
}

/**
 * A deep copy of `obj` with the values of keys named like a secret replaced by `'[redacted]'`:
 * keys whose last word is `token`, `secret`, `password`/`passwd`, `passphrase`, `credential`,
 * `authorization`, `cookie` or `key` (`peerToken`, `apiKey`, `private_key`). Keys that merely
 * mention one (`tokenTtl`, `tokenFile`), public key sets (`keys`) and other fields are kept.
 * Cycles are cut.
 *
 * @example
 * ```ts
 * redactConfig({ interop: { apiKey: 'k', port: 1 } }) // { interop: { apiKey: '[redacted]', port: 1 } }
 * ```
 */
export function redactConfig<T>(obj: T): T {
  const seen = new WeakSet<object>()
  const walk = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v
    if (seen.has(v)) return '[circular]'
    seen.add(v)
    if (Array.isArray(v)) return v.map(walk)
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = isSecretKey(k) && x !== undefined && x !== null ? REDACTED : walk(x)
    return out
  }
  return walk(obj) as T
}
