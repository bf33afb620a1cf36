/**
 * Which entries a store reports at open: those that change the signer set or supersede a version.
 *
 * @module
 * @internal
 */

import { ConfigError } from '@ron/core'
import type { LogEntry } from '../entry.js'

/** True for entries that change the signer set or supersede a version. */
export function isNotable(e: LogEntry): boolean {
  const items = (e.payload as { items?: Array<{ kind?: unknown }> } | undefined)?.items ?? []
  return items.some((i) => i.kind === 'signer-set') || e.payload?.meta?.supersedes !== undefined
}

/** The error of opening an empty log without a genesis signer set. */
export function noGenesis(): ConfigError {
  return new ConfigError('signers: a new registry log needs a genesis signer set (config "signers")', { details: { path: 'signers' } })
}
