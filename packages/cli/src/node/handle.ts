/**
 * The running node's handle ({@link RonNode}): readiness, the summary, reload, and a `close()`
 * that runs the shutdown once.
 *
 * @module
 */

import type { Clock, Logger, NodeIdentity, RonService } from '@ron/core'
import { CliError } from '../exit-codes.js'
import type { NodeSummary, RonNode } from '../node.js'
import type { PeerDirectory } from '../peers.js'
import type { NodeReloadable } from '../services.js'
import type { ReloadResult } from './reload.js'

/** What {@link nodeHandle} is built from. */
export interface NodeHandleParts {
  summary: NodeSummary
  issuerKid: string
  identity: NodeIdentity
  firstStart: boolean
  peers: Pick<PeerDirectory, 'directory' | 'forget'>
  /** The hosted services (read at each call). */
  hosted: () => readonly { name: string; service: Pick<RonService, 'health'> }[]
  /** False once the shutdown began. */
  accepting: () => boolean
  reload: (partial?: NodeReloadable) => Promise<ReloadResult>
  /** The shutdown sequence; run once by the first `close()`. */
  shutdown: () => Promise<void>
  drainDeadlineMs: number
  logger: Logger
  clock: Clock
}

/** The node's handle over its running parts. */
export function nodeHandle(p: NodeHandleParts): RonNode {
  const { logger, clock, summary } = p
  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      logger.info({ drainDeadlineMs: p.drainDeadlineMs }, 'shutting down')
      await p.shutdown()
      logger.info({}, 'stopped')
    })()
    return closing
  }
  const ready = (): boolean => p.accepting() && p.hosted().every((h) => h.service.health().ready)
  const whenReady = async (signal?: AbortSignal): Promise<void> => {
    let lastReport = clock.now()
    while (!ready()) {
      if (!p.accepting()) throw new CliError('node closed before it became ready')
      if (clock.now() - lastReport >= 10_000) {
        lastReport = clock.now()
        const missing = p.hosted().flatMap((h) => (h.service.health().ready ? [] : [`${h.name}: ${h.service.health().missing.join(', ') || 'not ready'}`]))
        logger.warn({ missing }, 'waiting for services to become ready')
      }
      await clock.sleep(20, signal)
    }
  }
  const peers = p.peers
  return {
    ...summary,
    issuerKid: p.issuerKid,
    identity: p.identity,
    nodes: peers.directory(),
    forgetPeer: (url: string): Promise<boolean> => peers.forget(url),
    firstStart: p.firstStart,
    ready,
    whenReady,
    summary: () => ({ ...summary, services: { ...summary.services } }),
    reload: p.reload,
    close,
    [Symbol.asyncDispose]: close,
  }
}
