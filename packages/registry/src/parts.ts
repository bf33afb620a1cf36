/**
 * The registry's parts, built on a service host: the Notary, Committer, SSE hub, Bus Publisher,
 * Checkpointor, Retention, Deep Verifier, Witness Pusher and Witness (see `topology.ts` and
 * `docs/CONCURRENCY.md`), their background tasks, and what they release at close.
 *
 * @module
 * @internal
 */

import type { KeyObject } from 'node:crypto'
import { join } from 'node:path'
import { BoundedQueue, HttpTransport, SseHub, systemRandom } from '@ron/core'
import type { Broadcast, Random, ServiceHost, Transport } from '@ron/core'
import type { noteSigner } from './checkpoint.js'
import { Checkpointor, type RetentionCommand } from './checkpointor.js'
import { Committer, type RegistryUpdated } from './committer.js'
import type { RegistryConfig } from './config.js'
import { cosigner, type Cosigner } from './cosignature.js'
import { DeepVerifier } from './deep-verifier.js'
import type { RegistryLog } from './log.js'
import { Notary } from './notary.js'
import { Publisher, UPDATED_EVENT } from './publisher.js'
import { Retention } from './retention.js'
import { CHANNELS, TASKS } from './topology.js'
import { Witness } from './witness.js'
import { WitnessPusher } from './witness-pusher.js'
import type { WriteHealth } from './write-health.js'
import { faultReason } from './write-fault.js'

/** The registry's parts. */
export interface RegistryParts {
  committed: Broadcast<RegistryUpdated>
  notary: Notary
  committer: Committer
  hub: SseHub<RegistryUpdated>
  publisher: Publisher
  retentionQueue: BoundedQueue<RetentionCommand>
  checkpointor: Checkpointor
  retention: Retention
  verifier: DeepVerifier
  pusher: WitnessPusher
  witness: Witness
  /** The HTTP transport made for witness URLs when the service was given none (closed with it). */
  ownTransport: Transport | undefined
}

/** Builds the parts; `health` receives the commit faults and the verifier's verdicts. */
export function registryParts(
  host: ServiceHost<RegistryConfig>,
  rt: { random?: Random },
  transport: Transport | undefined,
  log: RegistryLog,
  signer: ReturnType<typeof noteSigner>,
  witnessKey: KeyObject,
  health: WriteHealth,
): RegistryParts {
  const c = host.config.get()
  const cfg = (): RegistryConfig => host.config.get()
  const { clock, logger } = host
  const metrics = host.metrics.sink
  const onFault = (reason: string, error: unknown): void => health.fault(reason, error)
  const committed = host.broadcast<RegistryUpdated>(CHANNELS.committed)
  // Every commit is checkpointed before it is answered (see notary.ts).
  const notary = new Notary({ log, signer, clock, logger, ...(log.store.shared === undefined ? {} : { lease: log.store.shared.signer }) })
  const committer = new Committer({
    log,
    committed,
    capacity: { proposals: c.queues.proposals, approvals: c.queues.approvals },
    settings: () => ({ proposalTtlMs: cfg().proposalTtlMs, maxProposals: cfg().maxProposals, slowCommitMs: cfg().writeReadiness.slowCommitMs }),
    clock,
    metrics,
    logger,
    onAppend(ms, error) {
      metrics.observe('registry_commit_seconds', undefined, ms / 1000)
      if (error !== undefined) {
        const reason = faultReason(error)
        if (reason !== undefined) onFault(reason, error)
        else logger.error({ err: error }, 'commit append failed')
      } else if (ms > cfg().writeReadiness.slowCommitMs) {
        health.slowCommit(2 * cfg().writeReadiness.probeIntervalMs)
      }
    },
    onCommitted: () => notary.advance(),
    // A shared log's entry that does not extend HEAD: this node stops writing until a restart.
    onFollowError: () => health.setIntegrity(false),
  })
  const hub = new SseHub<RegistryUpdated>({
    name: CHANNELS.stream,
    bufferPerClient: c.sse.bufferPerClient,
    maxClients: c.sse.maxClients,
    heartbeatMs: c.sse.heartbeatMs,
    onLag: 'latest',
    signal: host.drainSignal,
    clock,
    metrics,
    replay: (lastEventId) => replayAfter(log, lastEventId, c.queues.committed),
  })
  const publisher = new Publisher({ committed, hub, log, metrics, logger })
  const retentionQueue = new BoundedQueue<RetentionCommand>({ name: CHANNELS.retention, capacity: c.queues.retention, metrics })
  const checkpointor = new Checkpointor({ log, notary, retention: retentionQueue, intervalMs: () => cfg().checkpointIntervalMs, clock, metrics, logger, onFault })
  const retention = new Retention({ log, queue: retentionQueue, limits: () => cfg().retention, clock, metrics, logger, onFault })
  const verifier = new DeepVerifier({ log, committed, settings: () => cfg().deepVerify, clock, metrics, logger, onResult: (ok) => health.setIntegrity(ok) })
  checkpointor.gauge()
  retention.gauge()

  // Witnesses are reached by URL: without a transport the service makes an HTTP one of its own.
  const witnessTransport = transport ?? new HttpTransport()
  const pusher = new WitnessPusher({
    log,
    notary,
    transport: witnessTransport,
    witnesses: () => cfg().witnesses,
    intervalMs: () => cfg().checkpointIntervalMs,
    timeoutMs: () => cfg().witnessTimeoutMs,
    clock,
    random: rt.random ?? systemRandom,
    metrics,
    logger,
  })
  pusher.gauge()
  let witnessSigner: Cosigner | undefined
  const witness = new Witness({
    cosigner: () => {
      const name = cfg().witness.name ?? `${log.origin}/witness`
      if (witnessSigner?.name !== name) witnessSigner = cosigner(name, witnessKey)
      return witnessSigner
    },
    logs: () => cfg().witness.logs,
    stateFile: c.dataDir === undefined ? undefined : join(c.dataDir, 'witness-state.json'),
    clock,
    metrics,
    logger,
  })
  return { committed, notary, committer, hub, publisher, retentionQueue, checkpointor, retention, verifier, pusher, witness, ownTransport: transport === undefined ? witnessTransport : undefined }
}

/** Starts the parts' tasks on the host's supervisor, the disk probe among them. */
export function spawnRegistryTasks(host: ServiceHost<RegistryConfig>, p: RegistryParts, log: RegistryLog, health: WriteHealth): void {
  const s = host.supervisor
  s.spawn(TASKS.committer, (signal) => p.committer.run(signal))
  s.spawn(TASKS.witnesses, (signal) => p.pusher.run(signal), { critical: false })
  s.spawn(TASKS.publisher, (signal) => p.publisher.run(signal))
  s.spawn(TASKS.checkpointor, (signal) => p.checkpointor.run(signal))
  s.spawn(TASKS.retention, (signal) => p.retention.run(signal), { critical: false })
  s.spawn(TASKS.verifier, (signal) => p.verifier.run(signal), { critical: false })
  s.spawn(TASKS.probe, async (signal) => {
    for (;;) {
      await host.clock.sleep(host.config.get().writeReadiness.probeIntervalMs, signal)
      p.checkpointor.gauge()
      if (health.diskOk || health.slow) continue
      try {
        // Also undoes what a failed write left behind, before writes turn ready again.
        await log.store.probe()
        health.setDisk(true)
      } catch (e) {
        host.logger.warn({ err: e }, 'disk probe failed')
        const reason = faultReason(e)
        if (reason !== undefined && reason !== health.diskReason) health.setDisk(false, reason)
      }
    }
  })
}

/** Releases the parts (after the drain): queues, hub, the own transport. The log store is the caller's. */
export async function closeParts(p: RegistryParts): Promise<void> {
  p.committer.close()
  p.notary.close()
  p.publisher.close()
  p.hub.close()
  p.retentionQueue.close()
  await p.ownTransport?.close()
}

/** Events after `lastEventId` (a version), read from the log; a long gap sends only HEAD. */
async function* replayAfter(log: RegistryLog, lastEventId: string, max: number): AsyncGenerator<{ id: string; event: string; data: RegistryUpdated }> {
  if (!/^[0-9]{1,15}$/.test(lastEventId)) return
  const head = log.head().version
  let from = Number(lastEventId) + 1
  if (head - from + 1 > max) from = head
  from = Math.max(from, log.oldest())
  for (let v = from; v <= head; v++) {
    const r = await log.read(v)
    if (r === undefined || !('entry' in r)) continue
    yield { id: String(v), event: UPDATED_EVENT, data: { type: 'RegistryUpdated', version: v, b3: r.entry.payloadB3, hash: r.hash, committedAt: r.entry.committedAt } }
  }
}
