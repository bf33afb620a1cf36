/**
 * Leaves: the bytes of an entry that the Merkle tree hashes and the C2SP entry bundles carry.
 *
 * A log created since the registry serves tiles (genesis `leafFormat: 'bundle'`) uses the
 * canonical entry (RFC 8785 JSON) as the leaf when it fits an entry bundle (at most 65 535
 * bytes), and otherwise the canonical entry without its `payload` member: `payloadB3` still
 * commits to the payload, which the registry keeps and serves at `GET /registry/payload/<b3>`.
 * An older log (no `leafFormat`) keeps its leaves: always the whole canonical entry. Either way
 * the leaf is a pure function of the stored entry, so it is the same before and after a restart.
 *
 * @module
 */

import { canonicalBytes, type JsonValue } from '@ron/core'
import type { Genesis } from './entry.js'
import { MAX_BUNDLE_LEAF } from './tiles.js'

/** How a log's entries become leaves. */
export type LeafFormat = 'entry' | 'bundle'

/** The leaf format of a log. */
export function leafFormatOf(g: Pick<Genesis, 'leafFormat'>): LeafFormat {
  return g.leafFormat === 'bundle' ? 'bundle' : 'entry'
}

/** True when an entry of `entryBytes` is its own leaf (its payload inline). */
export function leafIsWholeEntry(format: LeafFormat, entryBytes: number): boolean {
  return format === 'entry' || entryBytes <= MAX_BUNDLE_LEAF
}

/**
 * The leaf of an entry, from its canonical bytes.
 * @throws Error when the bytes of a large entry are not JSON
 */
export function leafBytes(format: LeafFormat, entryBytes: Uint8Array): Uint8Array {
  if (leafIsWholeEntry(format, entryBytes.length)) return entryBytes
  const entry = JSON.parse(Buffer.from(entryBytes).toString('utf8')) as Record<string, JsonValue>
  delete entry['payload']
  return canonicalBytes(entry)
}
