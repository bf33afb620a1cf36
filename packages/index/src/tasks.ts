/**
 * The index's background tasks on the host's supervisor (seed svc-index section 2): the store
 * janitor, the cache janitor, the breaker janitor and the optional warm-up prefetcher. Each is the
 * only writer of what it tends (seed I-2).
 *
 * @module
 */

import { CanceledError, Watch } from '@ron/core'
import type { NodeIdentity, ServiceHost } from '@ron/core'
import type { ResolvedIndexConfig } from './config.js'
import { diskFault } from './disk-gate.js'
import { homeStoredRecords, type IndexParts } from './parts.js'
import type { NameStore } from './store/index.js'
import { TASKS } from './topology.js'

/**
 * The reason a janitor cancels the other half of its wait with: one constant error, so a tick
 * builds no `DOMException` nor `CanceledError` (and their stacks) every second.
 */
const WAIT_OVER = new CanceledError('janitor wait over')

/** Sleeps `ms` or until `watch` changes, whichever comes first; the other wait is cancelled so nothing is left behind. */
async function sleepOrWake(host: ServiceHost<ResolvedIndexConfig>, ms: number, watch: Watch<number>, signal: AbortSignal): Promise<void> {
  const round = new AbortController()
  const both = AbortSignal.any([signal, round.signal])
  try {
    await Promise.race([host.clock.sleep(ms, both), watch.changed(both)])
  } finally {
    round.abort(WAIT_OVER)
  }
}

/**
 * Spawns the janitors and the warm-up prefetcher.
 * @returns what wakes the breaker janitor after a reload changed the peers or breaker settings.
 */
export function spawnIndexTasks(host: ServiceHost<ResolvedIndexConfig>, p: IndexParts, store: NameStore, identity: NodeIdentity): { peersChanged(): void; close(): void } {
  const cfg = host.config
  const clock = host.clock
  // The store janitor: the only background writer of the store. It homes what the start could
  // not, purges expired tombstones every `purgeIntervalMs`, and while a disk fault stands probes
  // every `storeProbeMs` until the disk takes a write again.
  host.supervisor.spawn(TASKS.storeJanitor, async (signal) => {
    let purgeAt = clock.now() + cfg.get().purgeIntervalMs
    for (;;) {
      const c = cfg.get()
      await sleepOrWake(host, Math.max(0, (p.disk.fault === undefined ? purgeAt : p.disk.probeAt) - clock.now()), p.disk.changed, signal)
      signal.throwIfAborted()
      try {
        if (p.disk.fault !== undefined) {
          if (clock.now() < p.disk.probeAt) continue
          await store.probe()
          if (p.unsigned) await homeStoredRecords(store, identity)
          p.unsigned = false
          host.logger.info({}, 'index: the disk takes writes again; name writes are ready')
          p.disk.set(undefined)
        } else if (clock.now() >= purgeAt) {
          purgeAt = clock.now() + c.purgeIntervalMs
          await store.purgeTombstones(clock.now() - c.tombstoneTtlSec * 1000)
        }
      } catch (e) {
        if (diskFault(e) === undefined) throw e
        // A failed probe keeps the fault (and its reason up to date); only refused writes count.
        p.disk.failed(e, p.disk.fault === undefined)
      }
    }
  })
  host.supervisor.spawn(TASKS.cacheJanitor, async (signal) => {
    for (;;) {
      await clock.sleep(cfg.get().purgeIntervalMs, signal)
      const now = clock.now()
      p.cache.purge(now)
      p.negative.purge(now)
      p.providers.purge(now)
      p.metrics.cacheEntries.set({ cache: 'positive' }, p.cache.size)
      p.metrics.cacheEntries.set({ cache: 'negative' }, p.negative.size)
      p.metrics.providerRecords.set(p.providers.size)
    }
  })
  // Breaker table changes (reload) are handed to the janitor, its only writer.
  let changed = false
  const wake = new Watch<number>(0)
  host.supervisor.spawn(TASKS.breakerJanitor, async (signal) => {
    for (;;) {
      await sleepOrWake(host, cfg.get().breakerJanitorMs, wake, signal)
      if (changed) {
        changed = false
        p.breakers.sync(cfg.get())
      } else p.breakers.publish()
    }
  })
  const warm = cfg.get().warmupKeys
  if (warm.length > 0) {
    host.supervisor.spawn(
      TASKS.warmup,
      async (signal) => {
        for (const key of warm) {
          if (signal.aborted) return
          await p.resolver.resolve(key, { signal }).catch(() => undefined)
        }
      },
      { restart: 'never', critical: false },
    )
  }
  return {
    peersChanged() {
      changed = true
      wake.set(wake.get() + 1)
    },
    close: () => wake.close(),
  }
}
