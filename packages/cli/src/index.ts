/**
 * `ron-node`: the RON host. `ron-node start` runs the services as servers; `put`/`get` talk to a
 * running node. The same composition is available in-process as {@link startNode}.
 *
 * @example
 * ```ts
 * import { startNode } from 'ron-node'
 *
 * const node = await startNode({ dataDir: '/tmp/ron', portBase: 0 })
 * console.log(node.admin, node.services.storage, node.tokenFile)
 * await node.close()
 * ```
 *
 * @packageDocumentation
 * @module ron-node
 */

export { startNode, cliVersion } from './node.js'
export type { StartNodeOptions, RonNode, NodeSummary, NodeStorageOptions } from './node.js'
export { runCli } from './cli.js'
export type { CliIo } from './cli.js'
export { ExitCode, CliError, exitCodeFor, EXIT_CODES_HELP } from './exit-codes.js'
export type { ExitCodeValue } from './exit-codes.js'
export { defaultDataDir, dataDirLayout, prepareDataDir, checkDataDirSafety, lockDataDir } from './data-dir.js'
export type { DataDirEnvironment, DataDirLayout, DataDirLock, PreparedDataDir, PrepareDataDirOptions } from './data-dir.js'
export { loadOrCreateIssuerKey, ensureAdminToken, ADMIN_SCOPES, ADMIN_TOKEN_TTL_SEC } from './keys.js'
export type { IssuerKeyResult, AdminTokenResult, EnsureAdminTokenOptions } from './keys.js'
export { nodeConfigSchema, storageConfigSchema, loadNodeConfig, printableConfig } from './config.js'
export type { NodeConfig, NodeConfigInput, LoadNodeConfigOptions } from './config.js'
export { createLogger, LOG_LEVELS } from './logger.js'
export type { CreateLoggerOptions, LogLevel } from './logger.js'
export { createAdminHandler, nodeStatus } from './admin.js'
export type { AdminHandlerOptions, HostedService, NodeStatus, ServiceStatus, QueueStatus } from './admin.js'
export { KNOWN_SERVICES, AVAILABLE_SERVICES, DEFAULT_PORT_BASE, PORT_OFFSETS, portFor } from './ports.js'
export type { ServiceName } from './ports.js'
export { DEFAULT_NODE_URL, resolveNodeUrl, resolveToken } from './client.js'
export type { ClientOptions, ResolvedToken } from './client.js'
export { putCommand } from './commands/put.js'
export type { PutArgs, PutOutcome } from './commands/put.js'
export { getCommand } from './commands/get.js'
export type { GetArgs, GetOutcome } from './commands/get.js'
export { createProgress, formatBytes } from './progress.js'
export type { Progress, ProgressOptions } from './progress.js'
