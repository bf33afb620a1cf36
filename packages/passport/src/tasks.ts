/**
 * Passport's background tasks on the host's supervisor (seed svc-passport §2; see
 * `topology.ts` and `docs/CONCURRENCY.md`): the bus subscriber, the key janitor, the disk probe,
 * the rotation scheduler and the registry sync. @internal
 *
 * @module
 */

import { isRonError, type ServiceHost } from '@ron/core'
import type { ResolvedPassportConfig } from './config.js'
import type { DiskHealth } from './disk-health.js'
import type { PassportParts } from './parts.js'
import type { RegistrySync } from './registry-sync.js'
import { TASKS } from './topology.js'

/** Spawns passport's tasks. @internal */
export function spawnPassportTasks(host: ServiceHost<ResolvedPassportConfig>, parts: PassportParts, disk: DiskHealth, sync: RegistrySync | undefined): void {
  const { clock } = host
  const o = host.config.get()
  const sink = host.metrics.sink
  const { keyring, log } = parts

  // Bus subscriber: epoch and policy events; lag is counted by the broadcast (bus_lagged_total).
  host.supervisor.spawn(TASKS.bus, async (signal) => {
    const sub = parts.policyBus.subscribe()
    try {
      for (;;) {
        const r = await sub.recv(signal)
        if ('lagged' in r) host.logger.warn({ lagged: r.lagged }, 'policy subscriber lagged')
        else if (r.value.type === 'epoch') sink.set('epoch_current', undefined, r.value.epoch)
      }
    } catch (e) {
      if (!signal.aborted && !isRonError(e, 'Closed')) throw e
    } finally {
      sub.close()
    }
  })

  // Key janitor: retires previous keys after their window, prunes and compacts the token tree
  // and the revocation log. A disk fault skips a round (logged), it never ends the task.
  host.supervisor.spawn(TASKS.janitor, async (signal) => {
    for (;;) {
      await clock.sleep(60_000, signal)
      try {
        const retired = await keyring.prune()
        if (retired.length > 0) {
          host.logger.info({ retired }, 'retired issuer keys')
          await parts.publishKeys()
        }
      } catch (err) {
        disk.note(err)
        host.logger.warn({ err }, 'could not retire issuer keys this round')
      }
      await log.prune().catch((err: unknown) => host.logger.warn({ err }, 'could not compact the revocation log this round'))
    }
  })

  // Disk probe: while a disk fault holds, try a small durable write every diskProbeMs.
  if (o.dataDir !== undefined) {
    host.supervisor.spawn(TASKS.disk, async (signal) => {
      for (;;) {
        await clock.sleep(o.diskProbeMs, signal)
        if (!disk.ok) await disk.probe()
      }
    })
  }

  if (o.rotation.everyMs !== undefined) {
    const every = o.rotation.everyMs
    host.supervisor.spawn(TASKS.rotation, async (signal) => {
      for (;;) {
        const since = clock.now() - (keyring.snapshot.current.activatedAt ?? clock.now())
        await clock.sleep(Math.max(0, every - since), signal)
        await parts.rotate()
        host.logger.info({ kid: keyring.snapshot.current.kid }, 'scheduled key rotation')
      }
    })
  }

  if (sync !== undefined) host.supervisor.spawn(TASKS.registry, (signal) => sync.run(signal))
}
