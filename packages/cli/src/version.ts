/**
 * The version of `ron-node`, read from its package.json.
 *
 * @module
 */

import { readFileSync } from 'node:fs'

let cached: string | undefined

/** The version of this package (read once from its package.json, next to `src/` and `dist/`). */
export function cliVersion(): string {
  if (cached !== undefined) return cached
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    cached = typeof pkg.version === 'string' ? pkg.version : '0.0.0'
  } catch {
    cached = '0.0.0'
  }
  return cached
}
