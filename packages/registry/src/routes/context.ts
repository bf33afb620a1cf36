/**
 * What the route handlers share.
 *
 * @module
 * @internal
 */

import type { Claims, Clock, MetricsSink, RonRequest, SseHub } from '@ron/core'
import type { Checkpointor } from '../checkpointor.js'
import type { Committer, RegistryUpdated } from '../committer.js'
import type { RegistryConfig } from '../config.js'
import type { RegistryLog } from '../log.js'
import type { Notary } from '../notary.js'

/** Shared state of the routes. */
export interface RouteDeps {
  log: RegistryLog
  committer: Committer
  checkpointor: Checkpointor
  /** The latest signed checkpoint and its cosignatures. */
  notary: Notary
  /** This node's witness verifier key, shown by `GET /registry/head`. */
  witnessKey: string | undefined
  /** Counts applied config reloads: what a reply cached across requests must be rebuilt after (the witness name is reloadable). */
  reloads(): number
  hub: SseHub<RegistryUpdated>
  config: () => RegistryConfig
  /** Throws `NotReady` when writes are shed (slow or failing disk, integrity mismatch, draining). */
  writeGate(): void
  clock: Clock
  metrics: MetricsSink
  /** Checks the request's token for `scope` as a route declaring it would (the host's). */
  authenticate(req: RonRequest, scope: string): Promise<Claims>
}
