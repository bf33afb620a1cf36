/**
 * `@ron/index`: resolver: name or b3: address → manifest → ranked provider set, with cache, hedged peer lookups and breakers.
 *
 * Not implemented yet: this package reserves its place in the workspace so that the layout of
 * SPEC.md section 1 holds from the start. Its service id is exported so hosts and tokens can
 * already name it (`aud`, scopes such as `index:…`).
 *
 * @packageDocumentation
 * @module @ron/index
 */

/** The service id of `@ron/index`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'index'
