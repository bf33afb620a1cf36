/**
 * What every hosted service is created with (`ServiceContext`): the node's identity, peers,
 * transport and auth, and its settings — the node-level base keys every service gets
 * (docs/service-contract.md §8) and each service's own section.
 *
 * @module
 */

import { join } from 'node:path'
import type { Clock, Logger, NodeIdentity } from '@ron/core'
import type { EtcdCoordinator } from '../coordination/etcd.js'
import type { PreparedDataDir } from '../data-dir.js'
import type { StartNodeOptions } from '../node.js'
import type { NodeTransport } from '../node-transport.js'
import type { PeerDirectory } from '../peers.js'
import type { ServiceName } from '../ports.js'
import type { NodeReloadable, ServiceContext } from '../services.js'
import type { NodeAuth } from './auth.js'
import type { ServiceSlot } from './listeners.js'

/**
 * The node's settings at start: each service's section and storage's, under the node's base keys
 * (drain deadline always, the read window, HTTP limits and CORS when given).
 */
export function nodeSettings(options: Pick<StartNodeOptions, 'config' | 'storage' | 'drainReadWindowMs' | 'http' | 'cors'>, drainDeadlineMs: number): NodeReloadable {
  return {
    ...(options.config ?? {}),
    ...(options.storage === undefined ? {} : { storage: options.storage }),
    // The node's base keys: every hosted service's defaults (docs/service-contract.md §8).
    drainDeadlineMs,
    ...(options.drainReadWindowMs === undefined ? {} : { drainReadWindowMs: options.drainReadWindowMs }),
    ...(options.http === undefined ? {} : { http: options.http }),
    ...(options.cors === undefined ? {} : { cors: options.cors }),
  }
}

/** What {@link serviceContext} is built from. */
export interface ServiceContextParts {
  identity: NodeIdentity
  peers: PeerDirectory
  layout: PreparedDataDir | undefined
  transport: NodeTransport
  auth: NodeAuth
  slots: readonly ServiceSlot[]
  hosted: readonly ServiceName[]
  config: NodeReloadable
  /** The node's admin URL: its origin may write cross-origin (the dashboard). */
  adminUrl: string
  etcd: EtcdCoordinator | undefined
  logger: Logger
  clock: Clock
}

/**
 * The context services are created with. Its `verifier` and `tokens` are the auth's at this
 * moment: refresh them with {@link useCurrentAuth} when the auth switches to the node's passport.
 */
export function serviceContext(p: ServiceContextParts): ServiceContext {
  const { layout } = p
  return {
    nodeId: p.identity.id,
    identity: p.identity,
    nodes: p.peers.directory(),
    root: layout?.root,
    amnesia: layout === undefined,
    transport: p.transport,
    verifier: p.auth.verifier,
    tokens: p.auth.tokens,
    peers: p.peers,
    logger: p.logger,
    clock: p.clock,
    url: (name) => p.slots.find((s) => s.name === name)?.url ?? '',
    hosted: new Set(p.hosted),
    config: p.config,
    writeOrigins: [new URL(p.adminUrl).origin],
    file: (...parts) => (layout === undefined ? undefined : join(layout.root, ...parts)),
    ...(p.etcd === undefined ? {} : { etcd: p.etcd }),
  }
}

/** Gives `ctx` the auth's current verifier and service tokens (after the switch to passport). */
export function useCurrentAuth(ctx: ServiceContext, auth: NodeAuth): void {
  ctx.verifier = auth.verifier
  ctx.tokens = auth.tokens
}
