/**
 * The node's admin listener handler (`/status`, `/keys`, `/metrics`, `/healthz`, `/readyz`, the
 * admin routes) over the node's running parts: attached as soon as the node knows its id, keys
 * and peers, so peers starting at the same time learn them while its services are created.
 *
 * @module
 */

import type { Clock, NodeIdentity } from '@ron/core'
import { createAdminHandler, type HostedService } from '../admin.js'
import type { EtcdCoordinator } from '../coordination/etcd.js'
import { adminHosts } from '../host-check.js'
import type { Listener } from '../listener.js'
import type { PeerDirectory } from '../peers.js'
import { cliVersion } from '../version.js'
import type { NodeAuth } from './auth.js'
import { handlerOf, type ServiceSlot } from './listeners.js'
import { parseReloadBody, type ReloadResult } from './reload.js'
import type { NodeReloadable } from '../services.js'

/** What {@link attachAdminHandler} serves. */
export interface NodeAdminParts {
  identity: NodeIdentity
  /** The services attached so far (read at each request). */
  hosted: () => readonly HostedService[]
  /** Every listener: those without a service yet are listed as pending. */
  slots: readonly ServiceSlot[]
  /** Services used on another node. */
  remote: Readonly<Record<string, string>>
  startedAt: number
  accepting: () => boolean
  auth: NodeAuth
  peers: PeerDirectory
  etcd: EtcdCoordinator | undefined
  reload: (partial: NodeReloadable) => Promise<ReloadResult>
  /** The bound host and the advertised one: the `Host` headers the admin listener answers. */
  host: string
  advertise: string | undefined
  clock: Clock
}

/** Routes the admin listener to the node's admin handler. */
export function attachAdminHandler(admin: Listener, p: NodeAdminParts): void {
  const { auth, peers } = p
  admin.attach(
    handlerOf(
      createAdminHandler({
        nodeId: p.identity.id,
        nodeKey: p.identity.publicKey,
        services: p.hosted,
        pending: () => Object.fromEntries(p.slots.filter((s) => s.service === undefined).map((s) => [s.name, s.url])),
        remote: () => p.remote,
        version: cliVersion(),
        startedAt: p.startedAt,
        accepting: p.accepting,
        keys: () => auth.publicKeys(),
        verifier: { verify: (token, req) => auth.verifier.verify(token, req) },
        peers: () => peers.list(),
        ...(p.etcd === undefined ? {} : { coordination: p.etcd }),
        forgetPeer: (url) => peers.forget(url),
        reload: (partial: unknown) => p.reload(parseReloadBody(partial)),
        allowedHosts: adminHosts(p.host, p.advertise),
        clock: p.clock,
      }),
    ),
  )
}
