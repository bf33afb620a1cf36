/**
 * `ron-node`: the RON host. `ron-node start` runs the services as servers; the client commands
 * talk to a running node. The same composition is available in-process as {@link startNode}, and
 * the command line as {@link runCli}.
 *
 * @example
 * ```ts
 * import { startNode } from 'ron-node'
 *
 * const node = await startNode({ dataDir: '/tmp/ron', portBase: 0 })
 * await node.whenReady()
 * console.log(node.admin, node.services.storage, node.tokenFile)
 * await node.close()
 * ```
 *
 * @packageDocumentation
 * @module ron-node
 */

export { startNode } from './node.js'
export type { StartNodeOptions, RonNode, NodeSummary, NodeStorageOptions, NodeReloadable, NodeBase, NodeHttpLimits, ReloadResult } from './node.js'
export { runCli } from './cli.js'
export type { CliIo } from './cli.js'
