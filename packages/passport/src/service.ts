/**
 * `createPassportService(config, transport)`: the key ring, KMS guard, revocation log, node
 * registry and issuer wired onto a core service host per the seed's topology (see `topology.ts`
 * and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { randomBytes, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import { mkdir } from 'node:fs/promises'
import {
  BusyError,
  MalformedError,
  NotReadyError,
  SseHub,
  UnauthorizedError,
  createServiceHost,
  createTokenVerifier,
  isRonError,
  noopLogger,
  publicKeyFromJwk,
  systemClock,
  type CachingTokenVerifier,
  type Clock,
  type KeySource,
  type RevocationCheck,
  type RevocationFeedItem,
  type RonService,
  type ServiceHost,
  type Transport,
} from '@ron/core'
import { IMMUTABLE_KEYS, passportConfigSchema, resolvePassportConfig, type PassportConfig, type Policy, type ResolvedPassportConfig } from './config.js'
import { DiskHealth } from './disk-health.js'
import type { IssuedToken, RevokeResult } from './dto.js'
import { createFileKeystore, writeFileAtomic } from './file-keystore.js'
import { Issuer, type IssueKind, type SignPlan } from './issuer.js'
import { Keyring, type PublishedJwk } from './keyring.js'
import { createMemoryKeystore, type Kms } from './kms.js'
import { KmsGuard } from './kms-guard.js'
import { registerPassportMetrics } from './metrics.js'
import { NodeRegistry } from './nodes.js'
import { servicePlan } from './policy.js'
import { RevocationLog } from './revocations.js'
import type { PassportContext } from './routes/context.js'
import { keyRoutes, ringSummary } from './routes/keys.js'
import { nodeKeyRoutes } from './routes/node-keys.js'
import { revocationRoutes } from './routes/revocations.js'
import { tokenRoutes } from './routes/tokens.js'
import { CHANNELS, TASKS, passportTopology } from './topology.js'
import { packageVersion } from './version.js'

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

/** What a body token is checked against when the request names no audience (passport checks it for any). */
const ANY_AUDIENCE = Object.freeze({ audience: '', anyAudience: true })

/** Events on the `policy` broadcast. */
export type PolicyEvent = { type: 'policy'; policy: Policy | undefined } | { type: 'epoch'; current: string; epoch: number }

/** Summary of the key ring (what `rotate` answers). */
export type KeyringSummary = ReturnType<typeof ringSummary>

/** What {@link PassportService.mintAdminToken} takes. */
export interface AdminTokenRequest {
  /** @default 'admin' */
  sub?: string
  /** Audiences. */
  aud: string[]
  /** Scopes (the admin token carries the whole catalog). */
  scope: string[]
  /** Lifetime; may exceed the policy's max ttl (the admin token lives 30 days). */
  ttlSec: number
}

/** The passport service: a {@link RonService} plus passport's own handles. */
export interface PassportService extends RonService {
  /** Passport's verifier (its own key ring and revocation log; never stale). */
  readonly verifier: CachingTokenVerifier
  /** Passport's verifying keys as a {@link KeySource} (for services hosted beside it). */
  readonly keys: KeySource
  /** Passport's revocation log as a {@link RevocationCheck}. */
  readonly revocations: RevocationCheck
  /** The published key set. */
  jwks(): { keys: PublishedJwk[] }
  /** Current, next and previous keys with their retirement times. */
  keySummary(): KeyringSummary
  /**
   * Rotates the issuer key: `next` becomes `current`, a new `next` is generated, the old
   * `current` verifies until its retirement.
   * @throws {@link TimeoutError} / {@link NotReadyError} when the KMS fails
   */
  rotate(): Promise<KeyringSummary>
  /**
   * Mints a token outside the policy (the host's admin path: ron-node's 30-day admin token). Its
   * key keeps verifying until the token expires or is revoked.
   */
  mintAdminToken(req: AdminTokenRequest, signal?: AbortSignal): Promise<IssuedToken>
  /**
   * Mints a service token for this host itself (`sub` e.g. `node:<id>`), through the issuance
   * pool, within the policy's max ttl. What `passportMinter` uses. At most the service-call scopes
   * (SPEC.md §5), one audience those scopes name, and `storage:write` only with a `maxBytes`
   * caveat of `serviceWriteMaxBytes`.
   * @throws {@link NotReadyError} (`no_policy`) without a policy
   * @throws {@link ForbiddenError} (`missing_scope`) for a scope outside the service-call scopes
   */
  mintServiceToken(req: { sub: string; aud: string; scope: string[]; ttlSec: number }, signal?: AbortSignal): Promise<IssuedToken>
  /**
   * Revokes a jti and its subtree (everything minted from it, on every service: `cascade: true` in
   * the feed) through the revocation worker; resolves once it is on disk.
   * @throws {@link NotReadyError} (`disk_full`, `io_error`, `read_only`) when the disk refuses: nothing is revoked
   */
  revoke(jti: string, signal?: AbortSignal): Promise<RevokeResult>
  /**
   * Retires a jti (SPEC.md §5, "Retiring is not revoking"): the token stops verifying at once
   * (`cascade: false` in the feed), tokens minted from it stay valid until their own `exp`. What
   * replacing the admin token does. `exp` (JWT seconds) bounds how long the entry is kept.
   * @throws {@link NotReadyError} (`disk_full`, `io_error`, `read_only`) when the disk refuses
   */
  retire(jti: string, options?: { exp?: number; signal?: AbortSignal }): Promise<RevokeResult>
  /**
   * Calls `fn` after every rotation (HTTP, scheduled or programmatic), before the rotation
   * answers: where a host re-mints its admin token with the new key and retires the old one
   * (`rotateWithAdminToken` / `ensureAdminToken`), so that when rotation answers the old admin
   * token no longer verifies. A throwing listener is logged, not fatal.
   * @returns a disposer
   */
  onRotate(fn: (keys: KeyringSummary) => void | Promise<void>): () => void
}

/**
 * Creates a passport. With `dataDir` the key ring, keys (file keystore), revocations, token tree
 * and enrolled nodes persist there; without it everything lives in memory. Without `policy` it
 * verifies, attenuates, revokes and publishes keys but issues nothing.
 *
 * @throws `ConfigError` ({@link MalformedError}) for invalid config, naming the key
 * @throws {@link TimeoutError} / {@link NotReadyError} when the KMS cannot create the first keys
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createPassportService } from '@ron/passport'
 *
 * const passport = await createPassportService({
 *   dataDir: './data/passport',
 *   policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] } } },
 * })
 * createServer(passport.handle).listen(7703)
 * ```
 */
export async function createPassportService(config: PassportConfig = {}, transport?: Transport): Promise<PassportService> {
  const o = resolvePassportConfig(config)
  const clock = o.clock ?? systemClock
  if (o.dataDir !== undefined) await mkdir(o.dataDir, { recursive: true, mode: 0o700 })
  const kms: Kms = o.keystore ?? (o.dataDir !== undefined ? createFileKeystore({ dir: join(o.dataDir, 'keys') }) : createMemoryKeystore())
  const topology = passportTopology(o)
  const verifierRef: { current?: CachingTokenVerifier } = {}
  const host = createServiceHost<ResolvedPassportConfig>({
    id: o.id,
    version: o.version ?? packageVersion(),
    topology,
    ...(transport === undefined ? {} : { transport }),
    drainDeadlineMs: o.drainDeadlineMs,
    clock,
    ...(o.random === undefined ? {} : { random: o.random }),
    logger: o.logger ?? noopLogger,
    // Verified lazily through the ring built below (the host only calls it on requests).
    auth: { verifier: { verify: (t, r) => verifierRef.current!.verify(t, r) } },
    // Only the data part is the reloadable snapshot: the host deep-freezes it, and runtime objects
    // (a plugged-in KMS, the clock, random, the logger) must stay mutable.
    config: { schema: passportConfigSchema, input: dataPart(config), immutable: IMMUTABLE_KEYS },
  })
  const sink = host.metrics.sink
  registerPassportMetrics(host.metrics)

  let kmsOk = true
  let kmsReason: string | undefined
  // Every local write reports to the disk health: a fault turns the write paths (issue: parent
  // links; revoke; rotation; enrolment) unready until a write or the probe succeeds again.
  const disk = new DiskHealth(o.dataDir, (ok, reason) => {
    host.readiness.set('disk', ok, reason)
    host.readiness.setPath('revoke', ok, reason)
    updateIssueReadiness()
    if (ok) host.logger.info({}, 'passport data directory takes writes again')
    else host.logger.error({ reason }, 'passport data directory refuses writes: issuance and revocation answer 503 until it recovers')
  })
  if (o.dataDir !== undefined) host.readiness.declare('disk', 'write', true)
  host.readiness.setPath('revoke', true)
  const updateIssueReadiness = (): void => {
    const pool = host.pool(CHANNELS.issue)
    const policy = host.config.get().policy
    const full = pool.depth >= Math.max(1, Math.floor(o.shedIssueAt * pool.capacity))
    const reason =
      policy === undefined ? 'no_policy' : !kmsOk ? (kmsReason ?? 'kms_failing') : !disk.ok ? disk.reason : full ? 'issue_queue_full' : host.closing ? 'draining' : undefined
    host.readiness.setPath('issue', reason === undefined, reason)
  }
  const guard = new KmsGuard({
    kms,
    timeoutMs: o.kms.timeoutMs,
    breaker: o.kms.breaker === false ? undefined : o.kms.breaker,
    clock,
    metrics: sink,
    onHealth(ok, reason) {
      kmsOk = ok
      kmsReason = reason
      updateIssueReadiness()
    },
  })

  try {
    return await build(o, host, guard, kms, clock, updateIssueReadiness, verifierRef, disk)
  } catch (e) {
    // A KMS or data directory failure at startup: release what the host started.
    await host.service.close()
    await kms.close?.()
    throw e
  }
}

/** `config` without its runtime objects (they never go into the frozen config snapshot). */
function dataPart(config: PassportConfig): PassportConfig {
  const { keystore: _k, cluster: _cl, clock: _c, random: _r, logger: _l, ...data } = config
  return data
}

async function build(
  o: ResolvedPassportConfig,
  host: ServiceHost<ResolvedPassportConfig>,
  guard: KmsGuard,
  kms: Kms,
  clock: Clock,
  updateIssueReadiness: () => void,
  verifierRef: { current?: CachingTokenVerifier },
  disk: DiskHealth,
): Promise<PassportService> {
  const sink = host.metrics.sink
  const dir = o.dataDir
  const writeFile = dir === undefined ? undefined : (path: string, text: string): Promise<void> => disk.write('passport data directory', () => writeFileAtomic(path, text, dir))
  const cluster = o.cluster
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
    maxTtlSec: () => host.config.get().policy?.maxTtlSec ?? 3600,
    isRevoked: (jti) => log.isRevoked(jti),
    ...(writeFile === undefined ? {} : { writeFile }),
  })
  // In a cluster every node's tokens verify here too: the other nodes' published key sets.
  const peerKeys = new Map<string, Map<string, KeyObject>>()
  const setPeerKeys = (node: string, keys: readonly unknown[] | undefined): void => {
    if (node === cluster?.nodeId) return
    if (keys === undefined) peerKeys.delete(node)
    else peerKeys.set(node, indexJwks(keys))
  }
  for (const k of shared?.state.keySets ?? []) setPeerKeys(k.node, k.keys)
  const keys: KeySource =
    cluster === undefined
      ? keyring.keySource
      : {
          async getKey(kid, signal) {
            const own = await keyring.keySource.getKey(kid, signal)
            if (own !== undefined) return own
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
  const verifier = createTokenVerifier({ keys, revocations: log, clock, clockToleranceSec: o.rotation.clockToleranceSec })
  verifierRef.current = verifier
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

  const rotateListeners = new Set<(keys: KeyringSummary) => void | Promise<void>>()
  const setEpoch = (): void => {
    const cur = keyring.snapshot.current
    sink.set('epoch_current', undefined, cur.epoch)
    policyBus.publish({ type: 'epoch', current: cur.kid, epoch: cur.epoch })
  }

  function submit<T>(queue: string, job: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const pool = host.pool(queue)
    let p: Promise<T>
    try {
      p = pool.submit(job, signal)
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
  async function revoke(jti: string, exp: number | undefined, cascade: boolean, signal?: AbortSignal): Promise<RevokeResult> {
    const accepted = clock.now()
    return submit(
      CHANNELS.revoke,
      async () => {
        const started = clock.now()
        const r = await log.revoke(jti, { exp, cascade })
        // Publish every item written (the subtree included) to SSE followers.
        for (const item of r.written) {
          sink.inc('revocations_total')
          if (!hub.closed) hub.publish({ id: String(item.seq), event: 'revocation', data: item })
        }
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
    const jti = randomBytes(16).toString('base64url')
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

  const ctx: PassportContext = {
    host,
    cfg: o,
    clock,
    metrics: sink,
    policy: () => host.config.get().policy,
    keyring,
    log,
    nodes,
    issuer,
    verifier,
    submitIssue: (job, signal) => submit(CHANNELS.issue, job, signal),
    mintChild,
    revoke: (jti, exp, signal) => revoke(jti, exp, true, signal),
    async rotate() {
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
    },
    hub,
    verifyBodyToken: (token, aud) => verifier.verify(token, aud === undefined ? ANY_AUDIENCE : { audience: aud }),
  }
  host.routes([...tokenRoutes(ctx), ...revocationRoutes(ctx), ...keyRoutes(ctx), ...nodeKeyRoutes(ctx)])

  host.onReload(() => {
    // The new snapshot is already in host.config; tell subscribers and re-derive what depends on it.
    policyBus.publish({ type: 'policy', policy: host.config.get().policy })
    updateIssueReadiness()
    return keyring.refresh()
  })

  // Bus subscriber: epoch and policy events; lag is counted by the broadcast (bus_lagged_total).
  host.supervisor.spawn(TASKS.bus, async (signal) => {
    const sub = policyBus.subscribe()
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
          await publishKeys()
        }
      } catch (err) {
        disk.note(err)
        host.logger.warn({ err }, 'could not retire issuer keys this round')
      }
      await log.prune().catch((err: unknown) => host.logger.warn({ err }, 'could not compact the revocation log this round'))
    }
  })

  // Disk probe: while a disk fault holds, try a small durable write every diskProbeMs.
  if (dir !== undefined) {
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
        await ctx.rotate()
        host.logger.info({ kid: keyring.snapshot.current.kid }, 'scheduled key rotation')
      }
    })
  }

  host.readiness.setPath('verify', true)
  updateIssueReadiness()
  setEpoch()
  // The other nodes' revocations, links, enrolments and key sets as they change.
  const unwatch = cluster?.watch({
    revoked(items) {
      for (const item of log.applyRemote(items)) {
        sink.inc('revocations_total')
        if (!hub.closed) hub.publish({ id: String(item.seq), event: 'revocation', data: item })
      }
    },
    linked: (links) => log.linkRemote(links),
    enrolled: (n) => nodes.adopt(n),
    keys: setPeerKeys,
  })
  if (cluster !== undefined) await cluster.publishKeys(keyring.jwks().keys)
  host.onClose(async () => {
    unwatch?.()
    hub.close()
    await log.close()
    await kms.close?.()
  })

  const service = host.service
  const passport: PassportService = Object.assign(service, {
    verifier,
    keys,
    revocations: log,
    jwks: () => keyring.jwks(),
    keySummary: () => ringSummary(keyring.snapshot),
    rotate: async () => ringSummary(await ctx.rotate()),
    async mintAdminToken(req: AdminTokenRequest, signal?: AbortSignal) {
      if (req.ttlSec <= 0) throw new MalformedError('ttlSec must be positive', { details: { field: 'ttlSec' } })
      const t = await submit(
        CHANNELS.issue,
        (s) => issuer.sign({ sub: req.sub ?? 'admin', aud: req.aud, scope: req.scope, exp: Math.floor(clock.now() / 1000) + req.ttlSec }, 'admin', s),
        signal,
      )
      await keyring.noteLongLived(t.jti, t.kid, t.exp)
      return t
    },
    async mintServiceToken(req: { sub: string; aud: string; scope: string[]; ttlSec: number }, signal?: AbortSignal) {
      const policy = host.config.get().policy
      if (policy === undefined) throw new NotReadyError('passport has no issuance policy', { details: { reason: 'no_policy' }, retryAfterMs: 1000 })
      const ttl = Math.min(req.ttlSec, policy.maxTtlSec)
      const plan = servicePlan(req, host.config.get().serviceWriteMaxBytes)
      return submit(
        CHANNELS.issue,
        (s) => issuer.sign({ sub: req.sub, aud: [req.aud], scope: plan.scope, exp: Math.floor(clock.now() / 1000) + ttl, ...(plan.caveats === undefined ? {} : { caveats: plan.caveats }) }, 'service', s),
        signal,
      )
    },
    revoke: (jti: string, signal?: AbortSignal) => revoke(jti, undefined, true, signal),
    retire: (jti: string, options: { exp?: number; signal?: AbortSignal } = {}) => revoke(jti, options.exp, false, options.signal),
    onRotate(fn: (keys: KeyringSummary) => void | Promise<void>) {
      rotateListeners.add(fn)
      return () => {
        rotateListeners.delete(fn)
      }
    },
  })
  return passport
}
