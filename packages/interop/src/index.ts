/**
 * `@ron/interop`: bridge from the outside world: verified provider webhooks, external uploads into storage, audit sink, brownout.
 *
 * Not implemented yet: this package reserves its place in the workspace so that the layout of
 * SPEC.md section 1 holds from the start. Its service id is exported so hosts and tokens can
 * already name it (`aud`, scopes such as `interop:…`).
 *
 * @packageDocumentation
 * @module @ron/interop
 */

/** The service id of `@ron/interop`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'interop'
