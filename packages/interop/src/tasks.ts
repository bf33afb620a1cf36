/**
 * Interop's background tasks on the host's supervisor (SPEC 3.4, `docs/CONCURRENCY.md`): the audit
 * sink, the brownout sentinel and, with a `dataDir`, the dedupe journal's disk probe.
 *
 * @module
 */

import type { ServiceHost } from '@ron/core'
import type { InteropConfig } from './config.js'
import type { DedupeJournal } from './dedupe-journal.js'
import type { InteropParts } from './parts.js'
import { TASKS } from './topology.js'

/** Spawns interop's tasks; each ends when the supervisor's signal aborts. */
export function spawnInteropTasks(host: ServiceHost<InteropConfig>, parts: InteropParts, journal: DedupeJournal | undefined, probeMs: number): void {
  const clock = host.clock
  host.supervisor.spawn(TASKS.auditSink, (signal) => parts.audit.run(signal))
  host.supervisor.spawn(TASKS.sentinel, async (signal) => {
    for (;;) {
      await clock.sleep(host.config.get().brownout.sampleIntervalMs, signal)
      parts.brownout.evaluate()
    }
  })
  if (journal !== undefined) {
    host.supervisor.spawn(TASKS.dedupeJournal, async (signal) => {
      for (;;) {
        await clock.sleep(probeMs, signal)
        if (journal.fault !== undefined) await journal.probe()
      }
    })
  }
}
