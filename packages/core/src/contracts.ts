/**
 * The contracts between services (SPEC.md section 6a) as zod schemas with their inferred types.
 * Both sides of each exchange use the same schema: storage announces providers to index with
 * {@link providerAnnouncementSchema}, index binds names to {@link Manifest}s with
 * {@link nameWriteSchema}. Objects are strict: unknown fields are rejected (SPEC.md section 4).
 *
 * @example
 * ```ts
 * import { providerAnnouncementSchema } from '@ron/core'
 *
 * route.handler = async (ctx) => {
 *   const a = await ctx.json(providerAnnouncementSchema) // 400 Malformed naming the field
 *   return { status: 204 }
 * }
 * ```
 *
 * @module
 */

import { z } from 'zod'
import { MalformedError } from './errors.js'
import { isAddress, type Address } from './hash/address.js'

/** A `b3:` content address (SPEC.md section 4) as a zod schema; the output type is {@link Address}. */
export const addressSchema = z.custom<Address>((v) => isAddress(v), {
  message: 'expected "b3:" followed by 64 lowercase hex digits',
})

/** A media type such as `text/plain` or `application/vnd.ron+json; charset=utf-8`. */
export const mediaTypeSchema = z
  .string()
  .max(255)
  .regex(/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(?:\s*;.*)?$/i, 'expected a media type such as text/plain')

/**
 * A provider announcement (storage → index, `POST /providers`, scope `index:announce`): node
 * `node` holds `address` and serves it at `endpoint` for `ttlSec` seconds.
 */
export const providerAnnouncementSchema = z.strictObject({
  /** The announced content address. */
  address: addressSchema,
  /** The announcing node's id. */
  node: z.string().min(1).max(256),
  /** The storage URL peers reach the node at (a transport target name for purely in-memory systems). */
  endpoint: z.string().min(1).max(2048),
  /** How long the record lives, in seconds. */
  ttlSec: z.number().int().positive(),
})

/** See {@link providerAnnouncementSchema}. */
export type ProviderAnnouncement = z.infer<typeof providerAnnouncementSchema>

/** One part of a multi-part {@link Manifest}: the address and size of a piece of the content, in order. */
export const manifestPartSchema = z.strictObject({
  content: addressSchema,
  size: z.number().int().nonnegative(),
})

/** See {@link manifestPartSchema}. */
export type ManifestPart = z.infer<typeof manifestPartSchema>

/**
 * A file manifest (stored in storage, bound to names by index): `content` is the address of the
 * whole content, `size` its length in bytes, `type` its media type; `parts`, when present, lists
 * the pieces the content is made of, whose sizes add up to `size`. `kind` is `"file"` or absent.
 * A name may also bind a {@link DirManifest} (see `dirManifestSchema`).
 */
export const manifestSchema = z
  .strictObject({
    /** `"file"` (the default when absent): a {@link DirManifest} says `"dir"`. */
    kind: z.literal('file').optional(),
    content: addressSchema,
    size: z.number().int().nonnegative(),
    type: mediaTypeSchema,
    parts: z.array(manifestPartSchema).optional(),
  })
  .refine((m) => m.parts === undefined || m.parts.reduce((n, p) => n + p.size, 0) === m.size, {
    message: 'the sizes of parts must add up to size',
    path: ['parts'],
  })

/** See {@link manifestSchema}. */
export type Manifest = z.infer<typeof manifestSchema>

const LABEL_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/**
 * True when `name` follows the DNS label rules of SPEC.md 6a: lowercase labels of 1–63 characters
 * `[a-z0-9-]` without a leading or trailing `-`, joined by dots, at most 253 characters.
 *
 * @example
 * ```ts
 * isValidName('docs.alice') // true
 * isValidName('Docs')       // false (uppercase)
 * ```
 */
export function isValidName(name: unknown): name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 253) return false
  for (const label of name.split('.')) if (!LABEL_RE.test(label)) return false
  return true
}

/**
 * Validates a name (see {@link isValidName}); nothing is trimmed or case-folded.
 * @param field - names the input in the error's `details.field`. @default 'name'
 * @throws {@link MalformedError} with `details` `{ field, value }` when the name is not valid.
 */
export function parseName(name: string, field = 'name'): string {
  if (isValidName(name)) return name
  const raw: unknown = name
  const value = typeof raw === 'string' ? (raw.length > 80 ? `${raw.slice(0, 80)}…` : raw) : typeof raw
  throw new MalformedError(
    'malformed name: expected lowercase DNS labels of 1-63 characters [a-z0-9-] joined by dots, at most 253 characters',
    { details: { field, value } },
  )
}

/** A name as a zod schema (see {@link isValidName}). */
export const nameSchema = z.string().refine(isValidName, { message: 'expected lowercase DNS labels joined by dots' })

/**
 * A name write (`PUT /names/:name`): bind the name to `manifestAddress`. `expectedPrevious`
 * omitted = unconditional, `null` = create only, an address = compare-and-set (409 `Conflict`).
 */
export const nameWriteSchema = z.strictObject({
  manifestAddress: addressSchema,
  expectedPrevious: addressSchema.nullable().optional(),
})

/** See {@link nameWriteSchema}. */
export type NameWrite = z.infer<typeof nameWriteSchema>
