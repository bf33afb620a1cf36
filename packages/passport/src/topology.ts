/**
 * Passport's tasks and channels as data (SPEC.md 3.4, seed svc-passport sections 2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks
 * that `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { Topology } from '@ron/core'
import type { ResolvedPassportConfig } from './config.js'

/** Names of passport's channels, used as `queue` / `topic` metric labels. */
export const CHANNELS = {
  issue: 'issue',
  revoke: 'revoke',
  policy: 'policy',
  shutdown: 'shutdown',
  config: 'config',
} as const

/** Names of passport's tasks, used as `kind` metric labels. */
export const TASKS = {
  listener: 'http-listener',
  issue: 'issue-worker',
  revoke: 'revoke-worker',
  bus: 'bus-subscriber',
  janitor: 'key-janitor',
  rotation: 'rotation-scheduler',
  config: 'config-watcher',
  disk: 'disk-probe',
  registry: 'registry-sync',
} as const

/**
 * The topology for resolved options: queue capacities and the pool size follow the config.
 *
 * @example
 * ```ts
 * passportTopology(resolvePassportConfig({})).channels.find((c) => c.name === 'issue')?.capacity // 512
 * ```
 */
export function passportTopology(o: ResolvedPassportConfig): Topology {
  return {
    service: o.id,
    tasks: [
      { name: TASKS.listener, count: 1, criticality: 'critical', description: 'accepts requests, applies limits, strict DTOs and auth; try-sends issue and revoke jobs; verifies inline' },
      { name: TASKS.issue, count: o.issueWorkers, criticality: 'critical', description: 'applies the policy snapshot and signs through the KMS under its deadline (issue, attenuate, token exchange)' },
      { name: TASKS.revoke, count: 1, criticality: 'important', description: 'the single writer of the revocation log: revokes a token and its subtree, appends to the feed' },
      { name: TASKS.bus, count: 1, criticality: 'important', description: 'consumes policy and epoch events; updates epoch_current and logs lag' },
      { name: TASKS.janitor, count: 1, criticality: 'important', description: 'retires previous keys after their window and prunes the token tree' },
      { name: TASKS.rotation, count: o.rotation.everyMs === undefined ? 0 : 1, criticality: 'optional', description: 'rotates the issuer key every rotation.everyMs when configured' },
      { name: TASKS.config, count: 1, criticality: 'important', description: 'reload(): validates, swaps the policy snapshot atomically, publishes it on `policy`' },
      { name: TASKS.disk, count: o.dataDir === undefined ? 0 : 1, criticality: 'optional', description: 'while a disk fault holds, probes the data directory every diskProbeMs and turns the write paths ready again' },
      { name: TASKS.registry, count: o.registry === undefined ? 0 : 1, criticality: 'important', description: 'reads the policy and signer sets from the registry every registry.intervalMs (jittered), under a deadline, with backoff; keeps the last good state' },
    ],
    channels: [
      { name: CHANNELS.issue, kind: 'mpsc', capacity: o.issueQueue, producers: [TASKS.listener], consumers: [TASKS.issue], overflow: 'reject-new', pool: { concurrency: o.issueWorkers } },
      { name: CHANNELS.revoke, kind: 'mpsc', capacity: o.revokeQueue, producers: [TASKS.listener], consumers: [TASKS.revoke], overflow: 'reject-new', pool: { concurrency: 1 } },
      { name: CHANNELS.policy, kind: 'broadcast', capacity: o.policyBroadcast, producers: [TASKS.config, TASKS.listener, TASKS.rotation, TASKS.registry], consumers: [TASKS.bus], overflow: 'drop-oldest' },
      { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: ['all tasks'], overflow: 'last-write-wins' },
      { name: CHANNELS.config, kind: 'watch', capacity: 1, producers: [TASKS.config], consumers: [TASKS.listener, TASKS.issue], overflow: 'last-write-wins' },
    ],
  }
}
