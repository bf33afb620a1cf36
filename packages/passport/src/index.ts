/**
 * `@ron/passport`: capability tokens: issue, verify, attenuate, revoke; issuer key epochs and rotation.
 *
 * Not implemented yet: this package reserves its place in the workspace so that the layout of
 * SPEC.md section 1 holds from the start. Its service id is exported so hosts and tokens can
 * already name it (`aud`, scopes such as `passport:…`).
 *
 * @packageDocumentation
 * @module @ron/passport
 */

/** The service id of `@ron/passport`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'passport'
