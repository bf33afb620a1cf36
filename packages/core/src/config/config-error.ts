/**
 * The typed error of configuration loading.
 *
 * @module
 */

import { MalformedError, type RonErrorOptions } from '../errors.js'

/**
 * A configuration value (or file) is invalid. Its code is `Malformed`; `details` holds `path`
 * (dotted key path, e.g. `storage.maxObjectBytes`), `expected` and `got` when known, and
 * `issues` listing every problem found (the message names the first ones).
 */
export class ConfigError extends MalformedError {
  constructor(message: string, options?: RonErrorOptions) {
    super(message, options)
    this.name = 'ConfigError'
  }
}

/** A short, printable form of an offending value for error messages. */
export function describeValue(v: unknown): string {
  let s: string
  if (v === undefined) return 'nothing'
  if (typeof v === 'string') s = JSON.stringify(v)
  else if (typeof v === 'number' || typeof v === 'boolean' || v === null) s = String(v)
  else if (Array.isArray(v)) s = 'an array'
  else if (typeof v === 'object') s = 'an object'
  else s = typeof v
  return s.length > 60 ? `${s.slice(0, 60)}…` : s
}
