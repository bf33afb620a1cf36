/**
 * The node's peers at start: the peer directory over the pins file (opened before any service,
 * so the admin listener can answer with them) and the short wait for peers never seen before.
 *
 * @module
 */

import type { Clock, HttpTransport, KnownNode, Logger } from '@ron/core'
import type { PreparedDataDir } from '../data-dir.js'
import { PeerDirectory, passportEnrolments } from '../peers.js'
import { PinStore } from '../pins.js'
import type { NodeTransport } from '../node-transport.js'

/** Options of {@link openPeers}. */
export interface OpenPeersOptions {
  /** The peers' admin URLs. */
  admins: readonly string[]
  layout: PreparedDataDir | undefined
  /** This node as its peers see it. */
  self: KnownNode
  http: HttpTransport
  /**
   * The node's transport, when a passport (its own or `passport.url`) vouches for the node keys it
   * enrolled; nothing else does.
   */
  enrolledVia: NodeTransport | undefined
  clock: Clock
  logger: Logger
}

/** Opens the pins file and the peer directory (not loaded, not started). */
export async function openPeers(o: OpenPeersOptions): Promise<PeerDirectory> {
  const pins = await PinStore.open(o.layout?.pinsFile)
  return new PeerDirectory({
    admins: o.admins,
    pins,
    file: o.layout?.peersFile,
    self: o.self,
    http: o.http,
    ...(o.enrolledVia === undefined ? {} : { enrolled: passportEnrolments(o.enrolledVia, o.clock) }),
    logger: o.logger,
    now: () => o.clock.now(),
  })
}

/**
 * Waits a little for peers never seen before (nodes of a new cluster start together), so storage
 * starts with the whole placement set; later changes are reloaded. Asks every 200 ms until every
 * peer is settled or `waitMs` has passed, then logs the ones still not pinned.
 */
export async function awaitPeers(dir: Pick<PeerDirectory, 'refresh' | 'settled' | 'list'>, o: { waitMs: number; clock: Clock; logger: Logger }): Promise<void> {
  const waitUntil = o.clock.now() + o.waitMs
  for (;;) {
    await dir.refresh()
    if (dir.settled() || o.clock.now() >= waitUntil) break
    await o.clock.sleep(200)
  }
  const unknown = dir.list().filter((p) => p.state !== 'pinned')
  if (unknown.length > 0) o.logger.warn({ peers: unknown.map((p) => ({ admin: p.admin, state: p.state, error: p.error })) }, 'some peers are unreachable or refused; they join placement once they answer as pinned')
}
