/**
 * The node's reload (SIGHUP, `POST /admin/reload`, `RonNode.reload()`): re-reads the settings,
 * applies a partial on top, and reloads every hosted service with its part under the node's base
 * keys (docs/service-contract.md §8), one reload at a time.
 *
 * @module
 */

import { validateConfig, type Logger, type RonService } from '@ron/core'
import { reloadableConfigSchema } from '../config.js'
import { CliError } from '../exit-codes.js'
import type { ServiceName } from '../ports.js'
import { FACTORIES, type NodeReloadable, type NodeStorageOptions, type ServiceContext } from '../services.js'

/** What a reload did. */
export interface ReloadResult {
  /** Services whose config was reloaded. */
  reloaded: string[]
}

/** The entries of `o` whose value is defined. */
function defined<V>(o: Record<string, V | undefined>): Record<string, V> {
  return Object.fromEntries(Object.entries(o).filter((e): e is [string, V] => e[1] !== undefined))
}

/**
 * A reload request body (config-file spelling) → {@link NodeReloadable}.
 * @throws ConfigError (400 `Malformed`) naming the offending field.
 */
export function parseReloadBody(body: unknown): NodeReloadable {
  const parsed = validateConfig(reloadableConfigSchema, body ?? {})
  const sections: NodeReloadable = {}
  if (parsed.http !== undefined) sections.http = defined(parsed.http)
  if (parsed.cors !== undefined) sections.cors = defined(parsed.cors)
  if (parsed.drainDeadline !== undefined) sections.drainDeadlineMs = parsed.drainDeadline
  if (parsed.drainReadWindow !== undefined) sections.drainReadWindowMs = parsed.drainReadWindow
  for (const k of ['passport', 'registry', 'index', 'interop'] as const) if (parsed[k] !== undefined) sections[k] = parsed[k]
  if (parsed.storage === undefined) return sections
  const { repair, ...rest } = parsed.storage
  const storage: NodeStorageOptions = defined(rest)
  const r = defined({ intervalMs: repair.interval, bytesPerSec: repair.bytesPerSec, burst: repair.burst })
  return { ...sections, storage: Object.keys(r).length > 0 ? { ...storage, repair: r } : storage }
}

/** Options of {@link createNodeReloader}. */
export interface NodeReloaderOptions {
  /** The hosted services, in the order they are reloaded. */
  hosted: () => readonly { name: string; service: RonService }[]
  /** The service context once the node has started (undefined while starting). */
  context: () => ServiceContext | undefined
  /** Where the settings are re-read from. @default the context's current settings */
  source?: (() => NodeReloadable | Promise<NodeReloadable>) | undefined
  /** The start's drain deadline (`--drain-deadline`), kept unless the source gives one. */
  drainDeadlineMs: number
  logger: Logger
}

/**
 * The node's `reload(partial)`: serialised (a reload waits for the previous one), each service
 * reloaded with its part of the merged settings; the first service's error is thrown and the
 * settings stay as they were.
 */
export function createNodeReloader(o: NodeReloaderOptions): (partial?: NodeReloadable) => Promise<ReloadResult> {
  let reloading: Promise<unknown> = Promise.resolve()
  return (partial = {}) => {
    const run = async (): Promise<ReloadResult> => {
      const ctx = o.context()
      if (ctx === undefined) throw new CliError('the node is still starting')
      const source: NodeReloadable = o.source === undefined ? ctx.config : await o.source()
      const base: NodeReloadable = { drainDeadlineMs: o.drainDeadlineMs, ...source }
      const cfg: NodeReloadable = {
        ...base,
        ...partial,
        http: { ...(base.http ?? {}), ...(partial.http ?? {}) },
        storage: { ...(base.storage ?? {}), ...(partial.storage ?? {}), repair: { ...(base.storage?.repair ?? {}), ...(partial.storage?.repair ?? {}) } },
      }
      const reloaded: string[] = []
      for (const h of o.hosted()) {
        await h.service.reload(FACTORIES[h.name as ServiceName].reloadPartial(ctx, cfg))
        reloaded.push(h.name)
      }
      ctx.config = cfg
      o.logger.info({ reloaded }, 'config reloaded')
      return { reloaded }
    }
    const next = reloading.then(run, run)
    reloading = next.catch(() => undefined)
    return next
  }
}
