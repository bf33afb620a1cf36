/**
 * Which entries a store reports at open: those that change the signer set or supersede a version,
 * and those too large to be their own leaf.
 *
 * @module
 * @internal
 */

import { ConfigError } from '@ron/core'
import type { LogEntry } from '../entry.js'
import { MAX_BUNDLE_LEAF } from '../tiles.js'

/**
 * True for entries that change the signer set or supersede a version, and for entries too large
 * to be their own leaf (`bytes` > 65 535: the log serves their payload by address).
 */
export function isNotable(e: LogEntry, bytes = 0): boolean {
  if (bytes > MAX_BUNDLE_LEAF) return true
  const items = (e.payload as { items?: Array<{ kind?: unknown }> } | undefined)?.items ?? []
  return items.some((i) => i.kind === 'signer-set') || e.payload?.meta?.supersedes !== undefined
}

/** The error of opening an empty log without a genesis signer set. */
export function noGenesis(): ConfigError {
  return new ConfigError('signers: a new registry log needs a genesis signer set (config "signers")', { details: { path: 'signers' } })
}
