/**
 * `@ron/passport`: capability tokens — issue, verify, attenuate, revoke; issuer key epochs and
 * rotation; the revocation feed every verifier follows; service identity by client assertion.
 *
 * @example
 * ```ts
 * import { MemoryTransport } from '@ron/core'
 * import { createPassportService, createPassportClient } from '@ron/passport'
 *
 * const transport = new MemoryTransport()
 * const passport = await createPassportService({ policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] } } } }, transport)
 * transport.mount('passport', passport)
 * const admin = await passport.mintAdminToken({ aud: ['passport', 'storage'], scope: ['passport:issue', 'passport:revoke'], ttlSec: 3600 })
 * const client = createPassportClient(transport, { token: admin.token })
 * const { token } = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
 * ```
 *
 * @packageDocumentation
 * @module @ron/passport
 */

/** The service id of `@ron/passport`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'passport'

export { createPassportService } from './service.js'
export type { PassportService, AdminTokenRequest, KeyringSummary, PolicyEvent } from './service.js'
export { ensureAdminToken, rotateWithAdminToken } from './admin-token.js'
export type { AdminTokenOptions, AdminTokenResult } from './admin-token.js'
export { createPassportClient } from './client.js'
export type { PassportClient, PassportClientOptions } from './client.js'
export { passportMinter, remotePassportMinter } from './minter.js'
export type { RemotePassportMinterOptions } from './minter.js'
export { passportConfigSchema, policySchema, callerPolicySchema, registrySyncSchema, resolvePassportConfig, PASSPORT_IMMUTABLE_KEYS, PASSPORT_RUNTIME_KEYS } from './config.js'
export type { PassportConfig, PassportRuntime, PassportServiceOptions, DeprecatedPassportRuntimeInConfig, ResolvedPassportConfig, Policy, PolicyInput } from './config.js'
export { createMemoryKeystore } from './kms.js'
export type { Kms, KmsKey } from './kms.js'
export { createFileKeystore } from './file-keystore.js'
export type { FileKeystoreOptions } from './file-keystore.js'
export { narrow, narrowCaveats, checkIssue, servicePlan, prefixWithin } from './policy.js'
export type { AttenuateRequest, ChildPlan, IssueRequest, CaveatsInput } from './policy.js'
export type { KeyStatus, PublishedJwk } from './keyring.js'
export type { EnrolledNode } from './nodes.js'
export type { ClusterLink, ClusterRevocation, PassportClusterListener, PassportClusterState, PassportClusterStore } from './cluster-store.js'
export type { IssuedToken, IssueBody, VerifyBody, VerifyResult, AttenuateBody, RevokeBody, RevokeResult, EnrolBody, TokenBody } from './dto.js'
export { passportTopology, CHANNELS, TASKS } from './topology.js'
export { PASSPORT_METRICS } from './metrics.js'
