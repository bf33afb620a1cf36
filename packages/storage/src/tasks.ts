/**
 * Storage's background tasks on the host's supervisor (the seed's Repair Planner, Repair Workers,
 * announcer and disk probe; `topology.ts` declares them). The planner stops planning when the
 * drain starts (`preClose`): a node that is leaving moves no new repair traffic.
 *
 * @module
 */

import type { ServiceHost } from '@ron/core'
import type { ResolvedStorageConfig } from './config.js'
import type { DiskWatch } from './disk-watch.js'
import type { StorageParts } from './parts.js'
import { TASKS } from './topology.js'

/** Spawns the tasks the config asks for. */
export function spawnStorageTasks(host: ServiceHost<ResolvedStorageConfig>, parts: StorageParts, disk: DiskWatch): void {
  const o = host.config.get()
  const { supervisor, logger } = host
  for (let i = 0; i < o.repair.workers; i++) supervisor.spawn(TASKS.repairWorker, (signal) => parts.workers.run(signal))
  if (o.repair.auto) {
    let planning = true
    host.preClose(() => {
      planning = false
      parts.wakeable.wake()
    })
    supervisor.spawn(TASKS.planner, async (signal) => {
      for (;;) {
        // The sleep ends early when a read finds corrupt data (urgent work) or the drain starts.
        await parts.wakeable.sleep(host.config.get().repair.intervalMs, signal)
        if (!planning) return
        try {
          await parts.planner.plan(signal)
        } catch (e) {
          if (signal.aborted) return
          logger.warn({ err: e }, 'repair planning failed')
        }
      }
    })
  }
  const announcer = parts.announcer
  if (announcer !== undefined) supervisor.spawn(TASKS.announcer, (signal) => announcer.run(signal), { critical: false })
  supervisor.spawn(TASKS.probe, (signal) => disk.run(signal))
}
