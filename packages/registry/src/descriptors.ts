/**
 * Descriptor sets: what the registry's log holds. A descriptor set is
 * `{schemaVersion: 1, items: [...], meta?}`; each item is a typed descriptor (`service`,
 * `issuer-keys`, `policy`, `signer-set`), validated strictly by one schema per kind; an unknown
 * kind, an unknown field or a value JSON cannot carry is rejected, naming the field.
 *
 * @module
 */

import { z } from 'zod'
import { canonicalBytes, canonicalJson, toAddress, blake3, type Address, type JsonValue } from '@ron/core'
import { plainMembers } from './plain.js'
import { plainSetJson } from './plain-json.js'

/** The one schema version this package writes and reads. */
export const DESCRIPTOR_SCHEMA_VERSION = 1

const b64urlKey = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'expected a 32-byte key in base64url (43 characters)')
const IDENT = /^[A-Za-z0-9._:@-]+$/
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/
const SERVICE_NAME = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/
const MAX_TTL_SEC = 31_536_000
const label = z.string().regex(LABEL, 'expected a lowercase label [a-z0-9-], 1–63 characters')
const ident = z.string().min(1).max(128).regex(IDENT, 'expected 1–128 characters of [A-Za-z0-9._:@-]')

/** Any JSON value (finite numbers, no lone surrogates: what RFC 8785 can canonicalise). */
export const jsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number().refine((n) => Number.isFinite(n), 'expected a finite number'),
    z.string().refine((s) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s), 'lone surrogate'),
    z.array(jsonValueSchema),
    z.record(z.string(), jsonValueSchema),
  ]),
)

/** A service a node offers: `{kind: 'service', name, service, node, endpoint, ttlSec?}`. */
export const serviceDescriptorSchema = z.strictObject({
  kind: z.literal('service'),
  /** Unique name of this offering, e.g. `storage.node-a`. */
  name: z.string().min(1).max(253).regex(SERVICE_NAME, 'expected a lowercase dotted name'),
  /** The service type, e.g. `storage`. */
  service: label,
  /** The node id offering it. */
  node: ident,
  /** Base URL peers reach it at. */
  endpoint: z.url({ protocol: /^https?$/ }),
  ttlSec: z.number().int().positive().max(MAX_TTL_SEC).optional(),
})

/** An Ed25519 public key in JWK form, as passport publishes them. */
export const issuerJwkSchema = z.strictObject({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: b64urlKey,
  kid: z.string().min(1).max(128),
  alg: z.literal('EdDSA').optional(),
  use: z.literal('sig').optional(),
  epoch: z.number().int().nonnegative().optional(),
  status: z.enum(['active', 'verify-only']).optional(),
})

/** The keys of a token issuer: `{kind: 'issuer-keys', issuer, keys: [jwk…]}`. */
export const issuerKeysDescriptorSchema = z.strictObject({
  kind: z.literal('issuer-keys'),
  issuer: z.string().min(1).max(253),
  keys: z.array(issuerJwkSchema).min(1).max(32),
})

/** A named policy document: `{kind: 'policy', name, rules: {…}}`. */
export const policyDescriptorSchema = z.strictObject({
  kind: z.literal('policy'),
  name: z.string().min(1).max(253),
  rules: z.record(z.string(), jsonValueSchema),
})

/** One signer of a signer set: an id and an Ed25519 public key (raw 32 bytes, base64url). */
export const signerSchema = z.strictObject({ id: ident, publicKey: b64urlKey })

/** Fields of a signer set (also the shape of the genesis set in config). */
const signerSetFields = {
  threshold: z.number().int().min(1).max(64),
  signers: z.array(signerSchema).min(1).max(64),
}

function checkSignerSet(v: { threshold: number; signers: { id: string; publicKey: string }[] }, ctx: z.RefinementCtx): void {
  const ids = new Set<string>()
  v.signers.forEach((s, i) => {
    if (ids.has(s.id)) ctx.addIssue({ code: 'custom', message: `duplicate signer id '${s.id}'`, path: ['signers', i, 'id'] })
    ids.add(s.id)
  })
  const keys = new Set(v.signers.map((s) => s.publicKey)).size
  if (v.threshold > keys) ctx.addIssue({ code: 'custom', message: `threshold ${v.threshold} exceeds the ${keys} distinct keys`, path: ['threshold'] })
}

/** A signer set without `kind` (config's genesis set). */
export const signerSetSchema = z.strictObject(signerSetFields).superRefine(checkSignerSet)

/** The M-of-N signers that approve changes: `{kind: 'signer-set', threshold, signers}`. */
export const signerSetDescriptorSchema = z.strictObject({ kind: z.literal('signer-set'), ...signerSetFields }).superRefine(checkSignerSet)

/** Any descriptor; unknown kinds are rejected. */
export const descriptorSchema = z.discriminatedUnion('kind', [
  serviceDescriptorSchema,
  issuerKeysDescriptorSchema,
  policyDescriptorSchema,
  signerSetDescriptorSchema,
])

/** What a `supersede` record says: which version it marks and why. */
export const supersedeMarkSchema = z.strictObject({
  version: z.number().int().positive(),
  reason: z.string().min(1).max(1024),
})

/** Optional metadata of a descriptor set. `supersedes` is only set through `POST /registry/supersede`. */
export const descriptorMetaSchema = z.strictObject({
  note: z.string().max(4096).optional(),
  labels: z.record(z.string().max(128), z.string().max(1024)).optional(),
  supersedes: supersedeMarkSchema.optional(),
})

/** A descriptor set (strict). At most one `signer-set` item. */
export const descriptorSetSchema = z
  .strictObject({
    schemaVersion: z.literal(DESCRIPTOR_SCHEMA_VERSION),
    items: z.array(descriptorSchema).max(4096),
    meta: descriptorMetaSchema.optional(),
  })
  .superRefine((v, ctx) => {
    const sets = v.items.filter((i) => i.kind === 'signer-set').length
    if (sets > 1) ctx.addIssue({ code: 'custom', message: 'at most one signer-set item per descriptor set', path: ['items'] })
  })

/** The members the fast path takes: a service descriptor's, and a set's without `meta`. */
const SERVICE_MEMBERS = ['kind', 'name', 'service', 'node', 'endpoint', 'ttlSec'] as const
const SET_MEMBERS = ['schemaVersion', 'items'] as const

/** An `http(s)://` URL of printable ASCII (nothing zod's URL check would trim or strip) that `URL` parses. */
const PLAIN_ENDPOINT = /^https?:\/\/[\x21-\x7e]+$/

/** A service descriptor exactly as {@link serviceDescriptorSchema} outputs it, or `undefined` when not positively recognised. */
function plainService(v: unknown): ServiceDescriptor | undefined {
  const n = plainMembers(v, SERVICE_MEMBERS)
  if (n < 0) return undefined
  const { kind, name, service, node, endpoint, ttlSec } = v as Record<string, unknown>
  if (kind !== 'service') return undefined
  if (typeof name !== 'string' || name.length < 1 || name.length > 253 || !SERVICE_NAME.test(name)) return undefined
  if (typeof service !== 'string' || !LABEL.test(service)) return undefined
  if (typeof node !== 'string' || node.length < 1 || node.length > 128 || !IDENT.test(node)) return undefined
  if (typeof endpoint !== 'string' || !PLAIN_ENDPOINT.test(endpoint) || !URL.canParse(endpoint)) return undefined
  if (n === 5) return { kind, name, service, node, endpoint }
  if (n !== 6 || typeof ttlSec !== 'number' || !Number.isInteger(ttlSec) || ttlSec <= 0 || ttlSec > MAX_TTL_SEC) return undefined
  return { kind, name, service, node, endpoint, ttlSec }
}

/**
 * The common descriptor set — `{schemaVersion: 1, items: [service descriptors]}`, no `meta` —
 * exactly as {@link descriptorSetSchema} outputs it, checked without zod (~75k instructions a
 * proposal under callgrind); `undefined` for anything else, which the caller hands to the schema
 * so that it accepts or refuses it with its own error. @internal
 */
export function plainDescriptorSet(v: unknown): DescriptorSet | undefined {
  if (plainMembers(v, SET_MEMBERS) !== 2) return undefined
  const o = v as Record<string, unknown>
  const list = o['items']
  if (o['schemaVersion'] !== DESCRIPTOR_SCHEMA_VERSION || !Array.isArray(list) || list.length > 4096) return undefined
  const items: ServiceDescriptor[] = []
  for (let i = 0; i < list.length; i++) {
    const d = plainService(list[i])
    if (d === undefined) return undefined
    items.push(d)
  }
  return { schemaVersion: DESCRIPTOR_SCHEMA_VERSION, items }
}

/** A service descriptor. */
export type ServiceDescriptor = z.infer<typeof serviceDescriptorSchema>
/** An issuer-keys descriptor. */
export type IssuerKeysDescriptor = z.infer<typeof issuerKeysDescriptorSchema>
/** A policy descriptor. */
export type PolicyDescriptor = z.infer<typeof policyDescriptorSchema>
/** A signer-set descriptor. */
export type SignerSetDescriptor = z.infer<typeof signerSetDescriptorSchema>
/** A signer set (threshold and signers). */
export type SignerSet = z.infer<typeof signerSetSchema>
/** One signer. */
export type Signer = z.infer<typeof signerSchema>
/** Any descriptor. */
export type Descriptor = z.infer<typeof descriptorSchema>
/** Descriptor set metadata. */
export type DescriptorMeta = z.infer<typeof descriptorMetaSchema>
/** A descriptor set. */
export type DescriptorSet = z.infer<typeof descriptorSetSchema>

/**
 * `payloadB3` of a descriptor set: `b3:` + BLAKE3 of its RFC 8785 canonical JSON.
 *
 * @example
 * ```ts
 * payloadB3({ schemaVersion: 1, items: [] }) // 'b3:…'
 * ```
 */
export function payloadB3(payload: DescriptorSet): Address {
  const plain = plainSetJson(payload)
  return toAddress(blake3(plain === undefined ? canonicalBytes(payload) : Buffer.from(plain, 'utf8')))
}

/**
 * A payload's canonical JSON and its {@link payloadB3}, from one canonicalisation: a proposal
 * keeps the JSON, and its commit splices it into the entry's bytes instead of canonicalising the
 * payload again. @internal
 */
export function canonicalPayload(payload: DescriptorSet): { json: string; b3: Address } {
  const json = plainSetJson(payload) ?? canonicalJson(payload)
  return { json, b3: toAddress(blake3(Buffer.from(json, 'utf8'))) }
}

/** The signer-set item of a descriptor set, if it has one. */
export function signerSetOf(payload: DescriptorSet): SignerSetDescriptor | undefined {
  return payload.items.find((i): i is SignerSetDescriptor => i.kind === 'signer-set')
}
