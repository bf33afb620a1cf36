/**
 * The registry's tasks and channels as data (SPEC.md 3.4, seed svc-registry sections 2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks that
 * `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { Topology } from '@ron/core'
import type { RegistryConfig } from './config.js'

/** Names of the registry's channels (`queue` / `topic` metric labels). */
export const CHANNELS = {
  proposals: 'proposals',
  approvals: 'approvals',
  committed: 'committed',
  retention: 'retention_cmd',
  reload: 'cfg_reload',
  stream: 'stream',
  shutdown: 'shutdown',
} as const

/** Names of the registry's tasks (`kind` metric labels). */
export const TASKS = {
  listener: 'http-listener',
  committer: 'committer',
  publisher: 'bus-publisher',
  checkpointor: 'checkpointor',
  retention: 'retention',
  verifier: 'deep-verifier',
  reloader: 'config-reloader',
  probe: 'disk-probe',
  witnesses: 'witness-pusher',
} as const

/**
 * The topology for a resolved config.
 * @example
 * ```ts
 * registryTopology(resolveConfig({})).channels.find((c) => c.name === 'proposals')?.capacity // 512
 * ```
 */
export function registryTopology(c: RegistryConfig): Topology {
  return {
    service: c.id,
    tasks: [
      { name: TASKS.listener, count: 1, criticality: 'critical', description: 'routes requests, checks scopes and bodies, try-sends commands to the committer (full → 429 Busy)' },
      { name: TASKS.committer, count: 1, criticality: 'critical', description: 'single writer: proposals, approvals, commits (CAS on HEAD, fsync), expiry of proposals' },
      { name: TASKS.publisher, count: 1, criticality: 'important', description: 'turns `committed` into RegistryUpdated events on /registry/stream; never blocks the committer' },
      { name: TASKS.checkpointor, count: 1, criticality: 'important', description: 'every checkpointIntervalMs (and on demand) stores the latest checkpoint durably and asks witnesses for fresh cosignatures; then try-sends retention_cmd (every commit is checkpointed by the committer before it is answered)' },
      { name: TASKS.retention, count: 1, criticality: 'optional', description: 'prunes whole segments strictly covered by a signed checkpoint, never HEAD' },
      { name: TASKS.verifier, count: 1, criticality: 'optional', description: 're-verifies chain, leaves and checkpoint roots in bounded slices; a mismatch turns writes unready' },
      { name: TASKS.reloader, count: 1, criticality: 'important', description: 'applies reload(partial) snapshots one at a time (core host), later partials coalesce when 16 wait' },
      { name: TASKS.probe, count: 1, criticality: 'important', description: 'while writes are unready after a slow or failed commit, probes the disk and restores write readiness' },
      { name: TASKS.witnesses, count: 1, criticality: 'optional', description: 'one loop per configured witness: sends the latest checkpoint by C2SP add-checkpoint with a consistency proof, attaches the verified cosignature; backoff on failure' },
    ],
    channels: [
      { name: CHANNELS.proposals, kind: 'mpsc', capacity: c.queues.proposals, producers: [TASKS.listener], consumers: [TASKS.committer], overflow: 'reject-new' },
      { name: CHANNELS.approvals, kind: 'mpsc', capacity: c.queues.approvals, producers: [TASKS.listener], consumers: [TASKS.committer], overflow: 'reject-new' },
      { name: CHANNELS.committed, kind: 'broadcast', capacity: c.queues.committed, producers: [TASKS.committer], consumers: [TASKS.publisher, TASKS.verifier], overflow: 'drop-oldest' },
      { name: CHANNELS.retention, kind: 'mpsc', capacity: c.queues.retention, producers: [TASKS.checkpointor], consumers: [TASKS.retention], overflow: 'shed' },
      { name: CHANNELS.reload, kind: 'mpsc', capacity: 16, producers: ['reload()'], consumers: [TASKS.reloader], overflow: 'last-write-wins' },
      { name: CHANNELS.stream, kind: 'broadcast', capacity: c.sse.bufferPerClient, producers: [TASKS.publisher], consumers: ['sse clients'], overflow: 'last-write-wins' },
      { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: ['all tasks'], overflow: 'last-write-wins' },
    ],
  }
}
