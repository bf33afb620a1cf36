/**
 * The version of `@ron/index`, read from its package.json: what `/version` reports when the
 * config does not name one.
 *
 * @module
 */

import { readFileSync } from 'node:fs'

let cached: string | undefined

/**
 * This package's version, read once (on first use, not at import) from the package.json next to
 * `src/` and `dist/`; `'0.0.0'` when it cannot be read (a bundle that left it behind).
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    cached = typeof pkg.version === 'string' ? pkg.version : '0.0.0'
  } catch {
    cached = '0.0.0'
  }
  return cached
}
