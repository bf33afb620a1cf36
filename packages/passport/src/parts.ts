/**
 * Passport's parts, opened on a service host: the revocation log, node registry, key ring (with
 * the cluster's and the registry's key sets of this issuer), verifier, issuer, SSE hub, and the
 * work helpers (submit, revoke, mint, rotate) the routes and the service object share.
 * `service.ts` only wires them onto the host. @internal
 *
 * @module
 */

import type { KeyObject } from 'node:crypto'
import {
  BusyError,
  SseHub,
  UnauthorizedError,
  createTokenVerifier,
  newTokenId,
  publicKeyFromJwk,
  type CachingTokenVerifier,
  type KeySource,
  type RevocationFeedItem,
  type ServiceHost,
} from '@ron/core'
import type { PassportRuntime, Policy, ResolvedPassportConfig } from './config.js'
import type { DiskHealth } from './disk-health.js'
import type { IssuedToken, RevokeResult } from './dto.js'
import { writeFileAtomic } from './file-keystore.js'
import { Issuer, type IssueKind, type SignPlan } from './issuer.js'
import { Keyring, type KeyringSnapshot } from './keyring.js'
import type { KmsGuard } from './kms-guard.js'
import { NodeRegistry } from './nodes.js'
import { RevocationLog } from './revocations.js'
import { ringSummary } from './routes/keys.js'
import { CHANNELS } from './topology.js'

/** Summary of the key ring (what `rotate` answers). */
export type KeyringSummary = ReturnType<typeof ringSummary>

/** Events on the `policy` broadcast. */
export type PolicyEvent = { type: 'policy'; policy: Policy | undefined } | { type: 'epoch'; current: string; epoch: number }

/** A key set (public JWKs with `kid`) by kid; what is not an Ed25519 key is left out. */
function indexJwks(keys: readonly unknown[]): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>()
  for (const jwk of keys) {
    const kid = (jwk as { kid?: unknown } | null)?.kid
    const k = typeof kid === 'string' && kid.length > 0 ? publicKeyFromJwk(jwk) : undefined
    if (k !== undefined) out.set(kid as string, k)
  }
  return out
}

/** What {@link openParts} needs. @internal */
export interface PartsInput {
  host: ServiceHost<ResolvedPassportConfig>
  rt: PassportRuntime
  guard: KmsGuard
  disk: DiskHealth
  /** The policy in force (the registry's while synced, else the config's). */
  policy: () => Policy | undefined
  /** Re-derives the `issue` path's queue overlay. */
  updateIssueReadiness: () => void
}

/** Passport's parts. @internal */
export type PassportParts = Awaited<ReturnType<typeof openParts>>

/** Opens the log, nodes and key ring and builds the helpers around them. @internal */
export async function openParts({ host, rt, guard, disk, policy, updateIssueReadiness }: PartsInput) {
  const o = host.config.get()
  const clock = host.clock
  const sink = host.metrics.sink
  const dir = o.dataDir
  const writeFile = dir === undefined ? undefined : (path: string, text: string): Promise<void> => disk.write('passport data directory', () => writeFileAtomic(path, text, dir))
  const cluster = rt.cluster
  const shared = cluster === undefined ? undefined : { store: cluster, state: await cluster.load() }
  const log = await RevocationLog.open(clock, dir, (e) => disk.note(e), shared)
  const nodes = await NodeRegistry.open(clock, dir, writeFile, shared === undefined ? undefined : { store: shared.store, nodes: shared.state.nodes })
  const keyring = await Keyring.open({
    guard,
    clock,
    dataDir: o.dataDir,
    issuerKeyFile: o.issuerKeyFile,
    graceMs: o.rotation.graceMs,
    toleranceSec: o.rotation.clockToleranceSec,
    maxTtlSec: () => policy()?.maxTtlSec ?? 3600,
    isRevoked: (jti) => log.isRevoked(jti),
    ...(writeFile === undefined ? {} : { writeFile }),
  })
  // Other key sets of this issuer: the cluster's nodes (by node id) and the registry's signer sets.
  const peerKeys = new Map<string, Map<string, KeyObject>>()
  const setPeerKeys = (node: string, keys: readonly unknown[] | undefined): void => {
    if (node === cluster?.nodeId) return
    if (keys === undefined) peerKeys.delete(node)
    else peerKeys.set(node, indexJwks(keys))
  }
  for (const k of shared?.state.keySets ?? []) setPeerKeys(k.node, k.keys)
  const keys: KeySource = {
    async getKey(kid, signal) {
      const own = await keyring.keySource.getKey(kid, signal)
      if (own !== undefined || peerKeys.size === 0) return own
      for (const set of peerKeys.values()) {
        const k = set.get(kid)
        if (k !== undefined) return k
      }
      return undefined
    },
  }
  const publishKeys = async (): Promise<void> => {
    if (cluster === undefined) return
    await cluster.publishKeys(keyring.jwks().keys).catch((err: unknown) => host.logger.warn({ err }, 'could not publish the key set to the cluster (retried at the next change)'))
  }
  const verifier: CachingTokenVerifier = createTokenVerifier({ keys, revocations: log, clock, clockToleranceSec: o.rotation.clockToleranceSec })
  const issuer = new Issuer({ iss: o.issuer, keyring, guard, log, clock, metrics: sink })
  const policyBus = host.broadcast<PolicyEvent>(CHANNELS.policy)
  const hub = new SseHub<RevocationFeedItem>({
    name: 'revocations',
    bufferPerClient: 1024,
    maxClients: 1024,
    onLag: 'drop-oldest',
    replay: (last) => (/^\d+$/.test(last) ? log.since(Number(last)).map((i) => ({ id: String(i.seq), event: 'revocation', data: i })) : []),
    signal: host.drainSignal,
    clock,
    metrics: sink,
  })
  const publishRevocation = (item: RevocationFeedItem): void => {
    sink.inc('revocations_total')
    if (!hub.closed) hub.publish({ id: String(item.seq), event: 'revocation', data: item })
  }
  const rotateListeners = new Set<(keys: KeyringSummary) => void | Promise<void>>()
  const setEpoch = (): void => {
    const cur = keyring.snapshot.current
    sink.set('epoch_current', undefined, cur.epoch)
    policyBus.publish({ type: 'epoch', current: cur.kid, epoch: cur.epoch })
  }

  function submit<T>(queue: string, job: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    let p: Promise<T>
    try {
      p = host.pool(queue).submit(job, signal)
    } catch (e) {
      p = Promise.reject(e instanceof Error ? e : new Error(String(e)))
    }
    if (queue === CHANNELS.issue) updateIssueReadiness()
    return p
      .catch((e: unknown) => {
        // The seed counts every refused try_send as a drop of that queue.
        if (e instanceof BusyError) sink.inc('queue_dropped_total', { queue })
        throw e
      })
      .finally(() => {
        if (queue === CHANNELS.issue) updateIssueReadiness()
      })
  }

  /**
   * Revokes (`cascade`) or retires `jti` on the single revocation worker. The log writes the feed
   * items durably before it applies them; only then are they published and answered.
   */
  function revoke(jti: string, exp: number | undefined, cascade: boolean, signal?: AbortSignal): Promise<RevokeResult> {
    const accepted = clock.now()
    return submit(
      CHANNELS.revoke,
      async () => {
        const started = clock.now()
        const r = await log.revoke(jti, { exp, cascade })
        for (const item of r.written) publishRevocation(item)
        // Passport's own verifier sees it as soon as the worker applied it.
        sink.observe('revocation_propagation_seconds', undefined, (clock.now() - accepted) / 1000)
        sink.observe('passport_revoke_latency_seconds', undefined, (clock.now() - started) / 1000)
        // A revoked or retired admin token no longer holds its key in the ring. The revocation is
        // durable already: a failure here only delays a key's retirement to the next refresh.
        await keyring.refresh().catch((err: unknown) => host.logger.warn({ err }, 'could not recompute key retirement after a revocation'))
        await publishKeys()
        return { seq: r.seq, revoked: r.revoked }
      },
      signal,
    )
  }

  /**
   * Mints a token from the token `parent` (issue and attenuate): the child is adopted under its
   * parent before it is signed (so a revocation of the parent racing this mint covers it, or the
   * mint is refused), and its link is on disk before the token is handed out.
   */
  async function mintChild(parent: string, plan: Omit<SignPlan, 'prf' | 'jti'>, kind: IssueKind, signal: AbortSignal): Promise<IssuedToken> {
    const jti = newTokenId()
    log.adopt(jti, parent, plan.exp)
    try {
      const t = await issuer.sign({ ...plan, prf: parent, jti }, kind, signal)
      await log.persistLink(jti, parent, plan.exp)
      // Caught by a revocation of an ancestor while it was signed: never handed out.
      if (log.blocksMinting(jti)) throw new UnauthorizedError('parent token revoked', { details: { reason: 'revoked', field: 'token' } })
      return t
    } catch (e) {
      log.abandon(jti, parent)
      throw e
    }
  }

  /** Rotates the key ring, then tells the cluster, the bus and the rotation listeners. */
  async function rotate(): Promise<KeyringSnapshot> {
    let s
    try {
      s = await keyring.rotate()
    } catch (e) {
      // The file keystore or keyring.json on a faulty disk: the rotation did not happen.
      disk.note(e)
      throw e
    }
    setEpoch()
    await publishKeys()
    for (const fn of [...rotateListeners]) {
      try {
        await fn(ringSummary(s))
      } catch (err) {
        host.logger.error({ err }, 'rotation listener failed')
      }
    }
    return keyring.snapshot
  }

  return { log, nodes, keyring, keys, verifier, issuer, hub, policyBus, cluster, setPeerKeys, publishKeys, publishRevocation, rotateListeners, setEpoch, submit, revoke, mintChild, rotate }
}
