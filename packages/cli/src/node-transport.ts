/**
 * The transport of a node's services (SPEC.md §5 "Peers"). Targets live in separate namespaces,
 * tried in this order, so nothing a peer reports can take a service's name:
 *
 * 1. a service this node uses on another node (`passport.url`, `registry.url`): that configured URL;
 * 2. a service name (`storage`, `passport`, …): in-process, never over the network (a service this
 *    node does not host answers `NotReady` `unreachable`, it is never looked up among peers);
 * 3. a node id (`n` + 16 hex): the storage URL of the pinned, accepted peer with that id (replica
 *    writes and repair); an id of no such peer is unreachable;
 * 4. an `http(s)://` URL (index peers, provider endpoints): over HTTP as is;
 * 5. any other name: in-process (what an embedder mounted).
 *
 * @module
 */

import {
  HttpTransport,
  MemoryTransport,
  NotReadyError,
  isNodeId,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '@ron/core'
import { KNOWN_SERVICES } from './ports.js'

/** How the transport reaches peers by node id. */
export interface PeerRoutes {
  /** The storage URL of the accepted peer with node id `nodeId`, or undefined. */
  urlOf(nodeId: string, service?: string): string | undefined
}

/** The transport of a node's services; see the module documentation for the routing rules. */
export class NodeTransport implements Transport {
  readonly memory: MemoryTransport
  readonly http: HttpTransport
  readonly #remote: Readonly<Record<string, string>>
  #peers: PeerRoutes | undefined

  /**
   * @param remote service name → base URL of the services used on another node (`passport.url`,
   *   `registry.url`); those names are never served in-process.
   */
  constructor(memory: MemoryTransport, http: HttpTransport, remote: Readonly<Record<string, string>> = {}) {
    this.memory = memory
    this.http = http
    this.#remote = { ...remote }
  }

  /** Routes node ids to the accepted peers of `peers`. */
  usePeers(peers: PeerRoutes): void {
    this.#peers = peers
  }

  request(target: string, req: TransportRequest): Promise<TransportResponse> {
    const remote = this.#remote[target]
    if (remote !== undefined) return this.http.request(remote, req)
    if ((KNOWN_SERVICES as readonly string[]).includes(target)) return this.memory.request(target, req)
    if (isNodeId(target)) {
      const url = this.#peers?.urlOf(target, 'storage')
      if (url === undefined) return Promise.reject(new NotReadyError(`node ${target} is not an accepted peer`, { details: { reason: 'unreachable', target }, retryAfterMs: 1000 }))
      return this.http.request(url, req)
    }
    if (/^https?:\/\//i.test(target)) return this.http.request(target, req)
    return this.memory.request(target, req)
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.memory.close(), this.http.close()])
  }
}
