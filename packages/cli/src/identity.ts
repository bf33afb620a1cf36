/**
 * The node's identity (SPEC.md §5): a stable node id and an Ed25519 node key kept in the data
 * directory, and the data directory's format version (SPEC.md §6b).
 *
 * @module
 */

import { access, readFile } from 'node:fs/promises'
import { isNodeId, newNodeId, type IssuerKey } from '@ron/core'
import type { DataDirLayout } from './data-dir.js'
import { errnoText } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'
import { loadOrCreateIssuerKey, writeSecret } from './keys.js'

/**
 * The data directory format this release writes. 1: the first release (issuer key, admin token,
 * storage; no `node.json`). 2: adds `node.json` (format and node id) and `keys/node.json`.
 */
export const DATA_DIR_FORMAT = 2

/** What `node.json` holds. */
export interface NodeFile {
  format: number
  nodeId: string
  createdAt: number
}

/** The node's identity. */
export interface NodeIdentity {
  /** Stable id: `node` in announcements, placement and logs, `sub: node:<id>` in its service tokens. */
  nodeId: string
  /** Ed25519 node key (client assertions towards another node's passport). */
  nodeKey: IssuerKey
  /** The format the directory had before this start (0: new, 1: previous release, 2: current). */
  previousFormat: number
  /** True when this start created the identity (new directory or migrated from format 1). */
  created: boolean
}

async function readNodeFile(path: string): Promise<NodeFile | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return undefined
    throw new CliError(`cannot read ${path}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  let parsed: Partial<NodeFile>
  try {
    parsed = JSON.parse(text) as Partial<NodeFile>
  } catch (e) {
    throw new CliError(`${path} is not JSON; restore it from a backup (it holds the node id)`, ExitCode.Error, { cause: e })
  }
  if (parsed === null || typeof parsed !== 'object' || typeof parsed.format !== 'number' || !Number.isInteger(parsed.format) || typeof parsed.nodeId !== 'string') {
    throw new CliError(`${path} is not a valid node file (expected {"format","nodeId"}); restore it from a backup`, ExitCode.Error)
  }
  return { format: parsed.format, nodeId: parsed.nodeId, createdAt: typeof parsed.createdAt === 'number' ? parsed.createdAt : 0 }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

/**
 * Loads the node identity from a locked data directory, creating it on first start and migrating a
 * directory of the previous release (format 1: no `node.json`) in place: that migration only adds
 * files (`node.json`, `keys/node.json`), so nothing needs a backup.
 * @throws {@link CliError} when the directory was written by a newer release (its message says to
 *   upgrade), or `node.json` / the node key are unreadable or invalid.
 */
export async function loadOrCreateIdentity(layout: DataDirLayout, now: number): Promise<NodeIdentity> {
  const existing = await readNodeFile(layout.nodeFile)
  if (existing !== undefined && existing.format > DATA_DIR_FORMAT) {
    throw new CliError(
      `data directory ${layout.root} has format ${existing.format}, newer than this ron-node supports (${DATA_DIR_FORMAT}); upgrade ron-node, or start with another --data-dir`,
      ExitCode.Error,
    )
  }
  // One form only (SPEC §5): an id that could be read as a service name, or anything else, is refused.
  if (existing !== undefined && !isNodeId(existing.nodeId)) {
    throw new CliError(
      `${layout.nodeFile} holds node id ${JSON.stringify(existing.nodeId)}, which is not a node id (n + 16 lowercase hex digits, e.g. n3f9c0a1b2c3d4e5f); restore node.json from a backup, or move it away to get a new id`,
      ExitCode.Error,
    )
  }
  const previousFormat = existing?.format ?? ((await exists(layout.issuerKey)) ? 1 : 0)
  const key = await loadOrCreateIssuerKey(layout.nodeKey, 'node key')
  if (existing !== undefined && existing.format === DATA_DIR_FORMAT) {
    return { nodeId: existing.nodeId, nodeKey: key.key, previousFormat, created: false }
  }
  const file: NodeFile = { format: DATA_DIR_FORMAT, nodeId: existing?.nodeId ?? newNodeId(), createdAt: existing?.createdAt ?? now }
  await writeSecret(layout.nodeFile, `${JSON.stringify(file, null, 2)}\n`)
  return { nodeId: file.nodeId, nodeKey: key.key, previousFormat, created: true }
}
