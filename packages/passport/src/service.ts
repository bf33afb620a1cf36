/**
 * `createPassportService(config, transport, runtime)`: passport on the service contract
 * (docs/service-contract.md). The host owns the lifecycle, limits, CORS, admission, readiness and
 * metrics registration; this file only wires passport's parts (`parts.ts`), routes and tasks
 * (`tasks.ts`) onto it, per the seed's topology (`topology.ts`, `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { join } from 'node:path'
import { mkdir } from 'node:fs/promises'
import {
  MalformedError,
  NotReadyError,
  createServiceHost,
  isRonError,
  noTransport,
  splitRuntime,
  systemRandom,
  type CachingTokenVerifier,
  type DependencySpec,
  type KeySource,
  type PathSpec,
  type RevocationCheck,
  type RonService,
  type Route,
  type ServiceHost,
  type Transport,
} from '@ron/core'
import { PASSPORT_IMMUTABLE_KEYS, PASSPORT_RUNTIME_KEYS, passportConfigSchema, resolvePassportConfig, type PassportRuntime, type PassportServiceOptions, type Policy, type ResolvedPassportConfig } from './config.js'
import { DiskHealth } from './disk-health.js'
import type { IssuedToken, RevokeResult } from './dto.js'
import { createFileKeystore } from './file-keystore.js'
import type { PublishedJwk } from './keyring.js'
import { createMemoryKeystore, type Kms } from './kms.js'
import { KmsGuard } from './kms-guard.js'
import { PASSPORT_METRICS } from './metrics.js'
import { openParts, type KeyringSummary, type PassportParts } from './parts.js'
import { servicePlan } from './policy.js'
import { RegistrySync } from './registry-sync.js'
import type { PassportContext } from './routes/context.js'
import { keyRoutes, ringSummary } from './routes/keys.js'
import { nodeKeyRoutes } from './routes/node-keys.js'
import { revocationRoutes } from './routes/revocations.js'
import { tokenRoutes } from './routes/tokens.js'
import { spawnPassportTasks } from './tasks.js'
import { CHANNELS, passportTopology } from './topology.js'
import { packageVersion } from './version.js'

export type { KeyringSummary, PolicyEvent } from './parts.js'

/** What a body token is checked against when the request names no audience (passport checks it for any). */
const ANY_AUDIENCE = Object.freeze({ audience: '', anyAudience: true })

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
 * and enrolled nodes persist there; without it everything lives in memory. Without a `policy`
 * (in the config, or synced from the registry with `registry`) it verifies, attenuates, revokes
 * and publishes keys but issues nothing. `runtime` carries the injected objects: a `keystore`
 * (KMS), a `cluster` store, `clock`, `random`, `logger`, `metrics` (a config that still carries
 * them, the form before the runtime argument, is accepted: they are split out; deprecated).
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
export async function createPassportService(config: PassportServiceOptions = {}, transport?: Transport, runtime: PassportRuntime = {}): Promise<PassportService> {
  const { data, runtime: rt } = splitRuntime<PassportRuntime>(config, runtime, PASSPORT_RUNTIME_KEYS)
  const o = resolvePassportConfig(data)
  if (o.dataDir !== undefined) await mkdir(o.dataDir, { recursive: true, mode: 0o700 })
  const kms: Kms = rt.keystore ?? (o.dataDir !== undefined ? createFileKeystore({ dir: join(o.dataDir, 'keys') }) : createMemoryKeystore())
  // Filled in by build(): the host verifies bearer tokens lazily through passport's own ring, and
  // readiness reads the ring and the registry's policy when asked.
  const late: { verifier?: CachingTokenVerifier; parts?: PassportParts; sync?: RegistrySync } = {}
  const policy = (): Policy | undefined => late.sync?.state?.policy ?? host.config.get().policy
  const host: ServiceHost<ResolvedPassportConfig> = createServiceHost({
    id: o.id,
    version: o.version ?? packageVersion(),
    topology: passportTopology(o),
    runtime: rt,
    ...(transport === undefined ? {} : { transport }),
    auth: { verifier: { verify: (t, r) => late.verifier!.verify(t, r) } },
    config: { schema: passportConfigSchema, input: data, immutable: PASSPORT_IMMUTABLE_KEYS, extendsBase: true },
    readiness: passportReadiness({ policy, verifyingKeys: () => late.parts?.keyring.verifying().length, disk: o.dataDir !== undefined, registry: o.registry !== undefined }),
  })
  host.metrics.register(PASSPORT_METRICS)
  const guard = new KmsGuard({
    kms,
    timeoutMs: o.kms.timeoutMs,
    breaker: o.kms.breaker === false ? undefined : o.kms.breaker,
    clock: host.clock,
    metrics: host.metrics.sink,
    onHealth: (ok, reason) => host.readiness.set(PASSPORT_DEPENDENCIES.kms, ok, reason ?? 'kms_failing'),
  })
  try {
    return await build(host, rt, transport ?? noTransport(o.id), guard, kms, policy, late)
  } catch (e) {
    // A KMS or data directory failure at startup: release what the host started.
    await host.service.close()
    await kms.close?.()
    throw e
  }
}

async function build(
  host: ServiceHost<ResolvedPassportConfig>,
  rt: PassportRuntime,
  net: Transport,
  guard: KmsGuard,
  kms: Kms,
  policy: () => Policy | undefined,
  late: { verifier?: CachingTokenVerifier; parts?: PassportParts; sync?: RegistrySync },
): Promise<PassportService> {
  const o = host.config.get()
  // The issue path also sheds on a filling issue queue (a brownout on top of its dependencies).
  const updateIssueReadiness = (): void => {
    const pool = host.pool(CHANNELS.issue)
    const full = pool.depth >= Math.max(1, Math.floor(host.config.get().shedIssueAt * pool.capacity))
    host.readiness.setPath('issue', !full, 'issue_queue_full')
  }
  // Every local write reports to the disk health: a fault turns the write paths (issue: parent
  // links; revoke; rotation; enrolment) unready until a write or the probe succeeds again.
  const disk = new DiskHealth(o.dataDir, (ok, reason) => {
    host.readiness.set(PASSPORT_DEPENDENCIES.disk, ok, reason)
    if (ok) host.logger.info({}, 'passport data directory takes writes again')
    else host.logger.error({ reason }, 'passport data directory refuses writes: issuance and revocation answer 503 until it recovers')
  })
  const parts = await openParts({ host, rt, guard, disk, policy, updateIssueReadiness })
  late.parts = parts
  late.verifier = parts.verifier
  const sync = registrySync(host, rt, net, parts)
  if (sync !== undefined) late.sync = sync
  const ctx: PassportContext = {
    host,
    cfg: o,
    clock: host.clock,
    metrics: host.metrics.sink,
    policy,
    keyring: parts.keyring,
    log: parts.log,
    nodes: parts.nodes,
    issuer: parts.issuer,
    verifier: parts.verifier,
    submitIssue: (job, signal) => parts.submit(CHANNELS.issue, job, signal),
    mintChild: parts.mintChild,
    revoke: (jti, exp, signal) => parts.revoke(jti, exp, true, signal),
    rotate: parts.rotate,
    hub: parts.hub,
    verifyBodyToken: (token, aud) => parts.verifier.verify(token, aud === undefined ? ANY_AUDIENCE : { audience: aud }),
  }
  host.routes(withPaths(host, [...tokenRoutes(ctx), ...revocationRoutes(ctx), ...keyRoutes(ctx), ...nodeKeyRoutes(ctx)]))
  host.onReload(() => {
    // The new snapshot is already in host.config; tell subscribers and re-derive what depends on it.
    parts.policyBus.publish({ type: 'policy', policy: policy() })
    updateIssueReadiness()
    return parts.keyring.refresh()
  })
  spawnPassportTasks(host, parts, disk, sync)
  updateIssueReadiness()
  parts.setEpoch()
  // The other nodes' revocations, links, enrolments and key sets as they change.
  const unwatch = parts.cluster?.watch({
    revoked: (items) => {
      for (const item of parts.log.applyRemote(items)) parts.publishRevocation(item)
    },
    linked: (links) => parts.log.linkRemote(links),
    enrolled: (n) => parts.nodes.adopt(n),
    keys: parts.setPeerKeys,
  })
  if (parts.cluster !== undefined) await parts.cluster.publishKeys(parts.keyring.jwks().keys)
  host.onClose(async () => {
    unwatch?.()
    parts.hub.close()
    await parts.log.close()
    await kms.close?.()
  })
  return passportObject(host, parts, policy)
}

/** The registry sync, when `registry` is configured: its state feeds the policy and the signer sets. */
function registrySync(host: ServiceHost<ResolvedPassportConfig>, rt: PassportRuntime, net: Transport, parts: PassportParts): RegistrySync | undefined {
  if (host.config.get().registry === undefined) return undefined
  host.readiness.setPath('registry', false, 'registry_pending')
  return new RegistrySync({
    net,
    config: () => host.config.get().registry,
    issuer: host.config.get().issuer,
    clock: host.clock,
    random: rt.random ?? systemRandom,
    metrics: host.metrics.sink,
    logger: host.logger,
    onState(state) {
      parts.setPeerKeys('registry', state.keys.length === 0 ? undefined : state.keys)
      host.metrics.sink.set('registry_version', undefined, state.version)
      parts.policyBus.publish({ type: 'policy', policy: state.policy ?? host.config.get().policy })
      host.logger.info({ version: state.version, policy: state.policy !== undefined, keys: state.keys.length }, 'policy and signer sets synced from the registry')
    },
    onHealth: (ok, reason) => host.readiness.setPath('registry', ok, reason),
  })
}

/** The service object: the host's service plus passport's handles. */
function passportObject(host: ServiceHost<ResolvedPassportConfig>, parts: PassportParts, policy: () => Policy | undefined): PassportService {
  const { clock } = host
  const { keyring, issuer } = parts
  return Object.assign(host.service, {
    verifier: parts.verifier,
    keys: parts.keys,
    revocations: parts.log,
    jwks: () => keyring.jwks(),
    keySummary: () => ringSummary(keyring.snapshot),
    rotate: async () => ringSummary(await parts.rotate()),
    async mintAdminToken(req: AdminTokenRequest, signal?: AbortSignal) {
      if (req.ttlSec <= 0) throw new MalformedError('ttlSec must be positive', { details: { field: 'ttlSec' } })
      const t = await parts.submit(
        CHANNELS.issue,
        (s) => issuer.sign({ sub: req.sub ?? 'admin', aud: req.aud, scope: req.scope, exp: Math.floor(clock.now() / 1000) + req.ttlSec }, 'admin', s),
        signal,
      )
      await keyring.noteLongLived(t.jti, t.kid, t.exp)
      return t
    },
    async mintServiceToken(req: { sub: string; aud: string; scope: string[]; ttlSec: number }, signal?: AbortSignal) {
      const p = policy()
      if (p === undefined) throw new NotReadyError('passport has no issuance policy', { details: { reason: 'no_policy' }, retryAfterMs: 1000 })
      const ttl = Math.min(req.ttlSec, p.maxTtlSec)
      const plan = servicePlan(req, host.config.get().serviceWriteMaxBytes)
      return parts.submit(
        CHANNELS.issue,
        (s) => issuer.sign({ sub: req.sub, aud: [req.aud], scope: plan.scope, exp: Math.floor(clock.now() / 1000) + ttl, ...(plan.caveats === undefined ? {} : { caveats: plan.caveats }) }, 'service', s),
        signal,
      )
    },
    revoke: (jti: string, signal?: AbortSignal) => parts.revoke(jti, undefined, true, signal),
    retire: (jti: string, options: { exp?: number; signal?: AbortSignal } = {}) => parts.revoke(jti, options.exp, false, options.signal),
    onRotate(fn: (keys: KeyringSummary) => void | Promise<void>) {
      parts.rotateListeners.add(fn)
      return () => {
        parts.rotateListeners.delete(fn)
      }
    },
  })
}

/** Names of passport's readiness dependencies. */
export const PASSPORT_DEPENDENCIES = { kms: 'kms', policy: 'policy', keys: 'keys', disk: 'disk' } as const

/** What {@link passportReadiness} reads. @internal */
export interface ReadinessSources {
  /** The policy in force. */
  policy: () => Policy | undefined
  /** The key ring's verifying keys (`undefined` until it is open). */
  verifyingKeys: () => number | undefined
  /** Whether local writes go to a data directory (the `disk` dependency). */
  disk: boolean
  /** Whether the registry sync is on (the `registry` path). */
  registry: boolean
}

/**
 * Passport's readiness as data (SPEC.md 3.3a, seed svc-passport): `issue` needs the KMS and a
 * policy and is shed with the writes; `revoke` (the revocation writes) is shed with the writes;
 * `verify` needs the key set loaded and is shed with the reads. The `kms` and `disk` dependencies
 * are pushed (`host.readiness.set`), `policy` and `keys` computed when readiness is read.
 * @internal
 */
export function passportReadiness(src: ReadinessSources): { dependencies: DependencySpec[]; paths: Record<string, PathSpec> } {
  const D = PASSPORT_DEPENDENCIES
  const disk = src.disk ? [D.disk] : []
  const dependencies: DependencySpec[] = [
    { name: D.kms, gates: 'write', ok: true },
    { name: D.policy, gates: 'write', check: () => (src.policy() === undefined ? 'no_policy' : true) },
    {
      name: D.keys,
      gates: 'read',
      check: () => {
        const n = src.verifyingKeys()
        return n === undefined ? 'loading' : n > 0 ? true : 'no_keys'
      },
    },
    ...(src.disk ? [{ name: D.disk, gates: 'write', ok: true } as const] : []),
  ]
  const paths: Record<string, PathSpec> = {
    issue: { needs: [D.kms, D.policy, ...disk], shed: 'writes' },
    revoke: { needs: disk, shed: 'writes' },
    verify: { needs: [D.keys], shed: 'reads' },
    ...(src.registry ? { registry: { needs: [], shed: 'reads' } } : {}),
  }
  return { dependencies, paths }
}

/** The routes a path serves: a drain sheds them with it (`readinessPath`); a 413 counts `rejected_total{reason="over_limit"}`. */
function withPaths(host: ServiceHost<ResolvedPassportConfig>, routes: Route[]): Route[] {
  const pathOf: Record<string, string> = {
    '/v1/passport/issue': 'issue',
    '/v1/passport/attenuate': 'issue',
    '/v1/passport/token': 'issue',
    '/v1/passport/verify': 'verify',
    '/v1/passport/verify/batch': 'verify',
    '/v1/passport/revoke': 'revoke',
  }
  return routes.map((r) => {
    const readinessPath = r.method === 'POST' ? pathOf[r.path] : undefined
    const handler: Route['handler'] = async (c) => {
      try {
        return await r.handler(c)
      } catch (e) {
        if (isRonError(e, 'OverLimit')) host.metrics.sink.inc('rejected_total', { reason: 'over_limit' })
        throw e
      }
    }
    return { ...r, handler, ...(readinessPath === undefined ? {} : { readinessPath }) }
  })
}
