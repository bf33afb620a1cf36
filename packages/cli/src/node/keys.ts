/**
 * The node's identity at start: its id, node key and issuer key, from the data directory (created
 * on first start, migrated from format 1) or, in amnesia mode, ephemeral ones.
 *
 * @module
 */

import { generateIssuerKey, newNodeId, nodeIdentityFromKey, type Clock, type IssuerKey, type Logger, type NodeIdentity } from '@ron/core'
import type { PreparedDataDir } from '../data-dir.js'
import { loadOrCreateIdentity } from '../identity.js'
import { loadOrCreateIssuerKey } from '../keys.js'

/** What {@link loadNodeKeys} loads. */
export interface NodeKeys {
  nodeId: string
  /** Signs what the node vouches for (its identity). */
  nodeKey: IssuerKey
  /** Signs tokens until (or without) passport. */
  issuer: IssuerKey
  /** True when the node identity was created by this start. */
  firstStart: boolean
  /** The node's identity (id, public node key, signer) services get as `identity`. */
  identity: NodeIdentity
}

/**
 * Loads (or creates) the node's keys from `layout`; without a layout (amnesia) generates ephemeral
 * ones, as real as kept ones for as long as the process lives.
 * @throws CliError for an invalid key file or a data directory of a newer release
 */
export async function loadNodeKeys(layout: PreparedDataDir | undefined, o: { clock: Clock; logger: Logger }): Promise<NodeKeys> {
  if (layout === undefined) {
    const nodeId = newNodeId()
    const nodeKey = generateIssuerKey({ epoch: 1 })
    return { issuer: generateIssuerKey({ epoch: 1 }), nodeKey, nodeId, firstStart: true, identity: nodeIdentityFromKey(nodeId, nodeKey) }
  }
  const loadedId = await loadOrCreateIdentity(layout, o.clock.now())
  const { nodeId, nodeKey } = loadedId
  if (loadedId.previousFormat === 1) o.logger.info({ path: layout.nodeFile, nodeId }, 'migrated the data directory from format 1 (added node.json and the node key)')
  const loaded = await loadOrCreateIssuerKey(layout.issuerKey)
  if (loaded.created) o.logger.info({ kid: loaded.key.kid, path: layout.issuerKey }, 'generated issuer key')
  if (loaded.looseMode) o.logger.warn({ path: layout.issuerKey }, 'issuer key file is readable by others; chmod 600 it')
  return { nodeId, nodeKey, issuer: loaded.key, firstStart: loadedId.created && loadedId.previousFormat === 0, identity: nodeIdentityFromKey(nodeId, nodeKey) }
}
