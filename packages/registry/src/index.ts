/**
 * `@ron/registry`: a signed, append-only, provable log of descriptor sets with M-of-N approval.
 *
 * Proposals of descriptor sets are approved by M of N signers (Ed25519 over
 * `"ron:registry:v1\n" + origin + "\n" + baseVersion + "\n" + payloadB3`), then committed by the
 * single Committer: the entry links the previous entry's hash, HEAD moves by compare-and-set, the
 * segment is fsynced, the new tree is checkpointed (a C2SP signed note) and subscribers hear of it
 * (`/registry/stream`). Entries are leaves of an RFC 6962 Merkle tree (SHA-256; BLAKE3 by choice),
 * served as C2SP tlog-tiles so any standard tlog client (Go's `sumdb/tlog`) can verify the log;
 * witnesses cosign its checkpoints (C2SP tlog-witness); retention prunes what a checkpoint covers
 * while inclusion and consistency proofs keep working.
 *
 * @example
 * ```ts
 * import { MemoryTransport } from '@ron/core'
 * import { createRegistryClient, createRegistryService, generateSignerKey } from '@ron/registry'
 *
 * const alice = generateSignerKey('alice')
 * const registry = await createRegistryService({ signers: { threshold: 1, signers: [{ id: 'alice', publicKey: alice.publicKey }] }, auth: { keys: jwks } })
 * const transport = new MemoryTransport()
 * transport.mount('registry', registry)
 * const client = createRegistryClient(transport, { token })
 * const p = await client.propose({ schemaVersion: 1, items: [] })
 * await client.approveWith(p.proposalId, alice)
 * await client.commit(p.proposalId) // → { version: 1, payloadB3, committedAt, treeSize: 1, root }
 * ```
 *
 * @packageDocumentation
 * @module @ron/registry
 */

/** The service id of `@ron/registry`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'registry'

export { createRegistryService } from './service.js'
export type { RegistryService } from './service.js'
export { createRegistryClient } from './client.js'
export type {
  RegistryClient,
  RegistryClientOptions,
  RegistryCallOptions,
  ProposeResult,
  HeadView,
  EntryView,
  InclusionProofView,
  ConsistencyProofView,
} from './client.js'
export { registryConfigSchema, resolveConfig, REGISTRY_IMMUTABLE_KEYS, REGISTRY_RUNTIME_KEYS } from './config.js'
export type { RegistryConfig, RegistryConfigInput, RegistryRuntime, RegistryServiceConfig, DeprecatedRegistryRuntimeInConfig } from './config.js'
export { REGISTRY_METRICS } from './metrics.js'
export { registryTopology, CHANNELS, TASKS } from './topology.js'
export type { RegistryUpdated, ProposalView, ApprovalResult, CommitResult } from './committer.js'
export { UPDATED_EVENT } from './publisher.js'
export { DEADLINE_HEADER } from './routes/writes.js'

export { canonicalJson, canonicalBytes } from '@ron/core'
export type { JsonValue } from '@ron/core'
export {
  DESCRIPTOR_SCHEMA_VERSION,
  descriptorSetSchema,
  descriptorSchema,
  serviceDescriptorSchema,
  issuerKeysDescriptorSchema,
  policyDescriptorSchema,
  signerSetDescriptorSchema,
  signerSetSchema,
  payloadB3,
  signerSetOf,
} from './descriptors.js'
export type {
  DescriptorSet,
  Descriptor,
  DescriptorMeta,
  ServiceDescriptor,
  IssuerKeysDescriptor,
  PolicyDescriptor,
  SignerSetDescriptor,
  SignerSet,
  Signer,
} from './descriptors.js'
export {
  APPROVAL_DOMAIN,
  approvalMessage,
  signApproval,
  verifyApprovalSig,
  generateSignerKey,
  exportSignerKey,
  importSignerKey,
  evaluateQuorum,
  countQuorum,
} from './signers.js'
export type { Approval, ApprovalSubject, SignerKey, QuorumProgress, QuorumVerdict } from './signers.js'
export { encodeEntry, entryHash, genesisHash } from './entry.js'
export type { LogEntry, Genesis, Head, EncodedEntry } from './entry.js'
export {
  MerkleTree,
  blake3TreeHasher,
  sha256TreeHasher,
  treeHasher,
  verifyInclusion,
  verifyConsistency,
  rootFromInclusionProof,
  HASH_SIZE,
} from './merkle.js'
export type { TreeHasher, TreeHashName } from './merkle.js'
export {
  formatCheckpoint,
  parseCheckpoint,
  signCheckpoint,
  verifyCheckpoint,
  signNote,
  parseNote,
  verifyNote,
  addCosignature,
  signatureLine,
  noteSigner,
  noteKeyId,
  parseVerifierKey,
  generateLogKey,
  TREE_HASH_EXTENSION,
  treeHashLine,
  checkpointTreeHash,
} from './checkpoint.js'
export type { Checkpoint, Note, NoteSignature, NoteSigner, NoteVerifier } from './checkpoint.js'
export { COSIGNATURE_TYPE, cosigner, cosign, parseCosignerKey, verifyCosignature } from './cosignature.js'
export type { Cosigner, CosignerVerifier, VerifiedCosignature } from './cosignature.js'
export { TILE_WIDTH, TILE_HEIGHT, MAX_BUNDLE_LEAF, encodeTileIndex, tilePath, parseTilePath, encodeBundle, parseBundle, tilesOf } from './tiles.js'
export type { TileCoord } from './tiles.js'
export { leafBytes, leafFormatOf } from './leaf.js'
export type { LeafFormat } from './leaf.js'
export { verifyTlog, TlogVerifyError } from './tlog-client.js'
export type { TlogVerifyOptions, TlogVerifyReport } from './tlog-client.js'
export type { WitnessEndpoint, WitnessStatus } from './witness-pusher.js'
export type { WitnessedLog } from './witness.js'
export { RegistryLog } from './log.js'
export type { ReadResult, LeafResult, SupersededBy } from './log.js'
export { createSegmentStore, createMemoryStore } from './store/index.js'
export type { CheckpointLease, ProposalStore, PublishedCheckpoint, SharedLog, SharedProposal } from './store/index.js'
export type { LogStore, OpenOptions, RecoveredLog, SegmentInfo, StoredCheckpoint, SegmentStoreOptions, MemoryStoreOptions } from './store/index.js'
export type { VerifyReport } from './deep-verifier.js'
export { verifyLog, repairLog } from './verify-log.js'
export type { VerifyLogReport, RepairLogReport, LogCheckOptions, HeadRecord } from './verify-log.js'
export { initRegistrySigner, loadOrCreateLogKey, LOG_KEY_FILE, SIGNER_KEY_FILE, WITNESS_KEY_FILE } from './keys.js'
export type { NodeSigner } from './keys.js'
