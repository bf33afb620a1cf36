/**
 * `@ron/registry`: signed, append-only, hash-linked log of descriptor sets (propose → approve M-of-N → commit; checkpoints, proofs, retention).
 *
 * Not implemented yet: this package reserves its place in the workspace so that the layout of
 * SPEC.md section 1 holds from the start. Its service id is exported so hosts and tokens can
 * already name it (`aud`, scopes such as `registry:…`).
 *
 * @packageDocumentation
 * @module @ron/registry
 */

/** The service id of `@ron/registry`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'registry'
