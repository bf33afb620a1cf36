/**
 * Masking secrets before configuration is logged or printed.
 *
 * @module
 */

/** The replacement for redacted values. */
export const REDACTED = '[redacted]'

const SECRET_KEY_RE = /(token|secret|passw(or)?d|passphrase|credential|authorization|cookie|key$)/i

/**
 * A deep copy of `obj` with the values of keys named like a secret replaced by `'[redacted]'`:
 * keys containing `token`, `secret`, `password`/`passwd`, `passphrase`, `credential`,
 * `authorization`, `cookie`, or ending in `key` (`apiKey`, `privateKey`). Public key sets
 * (`keys`) and non-secret fields are kept. Cycles are cut.
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
    for (const [k, x] of Object.entries(v)) out[k] = SECRET_KEY_RE.test(k) && x !== undefined && x !== null ? REDACTED : walk(x)
    return out
  }
  return walk(obj) as T
}
