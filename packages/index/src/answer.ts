/**
 * The wire shape of a resolve answer (`GET /resolve/:key`), shared by the service, the client and
 * peer queries. Responses may gain fields; readers ignore unknown ones (SPEC §4).
 *
 * @module
 */

import { z } from 'zod'
import type { Address } from '@ron/core'
import { isAddress } from '@ron/core'
import { manifestSchema, type Manifest } from './contracts.js'
import type { SignedNameRecord } from './name-record.js'

/** What a name is bound to: a file manifest or a directory manifest. */
export type ManifestKind = 'file' | 'dir'

/** Largest manifest text a peer answer may carry (SPEC §6a: 2 MiB). */
export const MAX_MANIFEST_TEXT = 2 * 1024 * 1024

/** Where an answer came from. */
export type AnswerSource = 'cache' | 'local' | 'peer'

/** One ranked provider. */
export interface RankedProvider {
  node: string
  endpoint: string
  /** Higher is better, in (0, 1]. */
  score: number
}

/** The answer for a `b3:` address. */
export interface AddressResolution {
  key: Address
  providers: RankedProvider[]
  source: AnswerSource
  /** How long the answer may be cached, in seconds. */
  ttlSec: number
}

/**
 * The answer for a name. A name bound to a file manifest carries the manifest and the providers
 * of its content; one bound to a directory manifest (`kind: "dir"`) carries the manifest's
 * address only (SPEC §6a: up to 2 MiB, fetched and verified by whoever reads it) and the
 * providers of the manifest itself.
 */
export interface NameResolution {
  key: string
  manifestAddress: Address
  /** `"file"` or `"dir"`; absent in answers of peers from before directories (a file). */
  kind?: ManifestKind
  /** The file manifest; absent when `kind` is `"dir"`. */
  manifest?: Manifest | undefined
  /**
   * The file manifest's exact text, sent only in answers to peer indexes (`x-ron-peer: 1`), which
   * check that it hashes to `manifestAddress` before they use the answer.
   */
  manifestText?: string | undefined
  /**
   * The record the name's home signed for this binding (SPEC §6a): peers believe an answer only
   * when it verifies under the pinned key of `record.node`.
   */
  record?: SignedNameRecord | undefined
  /** Providers of the file manifest's content, or of the directory manifest itself. */
  providers: RankedProvider[]
  source: AnswerSource
  ttlSec: number
}

/** Either answer. */
export type Resolution = AddressResolution | NameResolution

/** True when `r` answers a name. */
export function isNameResolution(r: Resolution): r is NameResolution {
  return 'manifestAddress' in r
}

const addressSchema = z.custom<Address>((v) => isAddress(v), 'expected a b3: address')

/** Lenient schema of a ranked provider in an answer from a peer or server. */
export const rankedProviderSchema = z.object({
  node: z.string().min(1).max(256),
  endpoint: z.string().min(1).max(2048),
  score: z.number().min(0).max(1),
})

/** Lenient schema of a resolve answer (unknown fields ignored). */
export const resolutionSchema = z.union([
  z.object({
    key: z.string(),
    manifestAddress: addressSchema,
    kind: z.enum(['file', 'dir']).optional(),
    manifest: manifestSchema.optional(),
    manifestText: z.string().max(MAX_MANIFEST_TEXT).optional(),
    // Checked strictly (and its signature verified) by the resolver, not here: a malformed record
    // is a refused answer, counted, not a broken peer.
    record: z.unknown().optional(),
    providers: z.array(rankedProviderSchema).max(256),
    source: z.enum(['cache', 'local', 'peer']),
    ttlSec: z.number().nonnegative(),
  }),
  z.object({
    key: addressSchema,
    providers: z.array(rankedProviderSchema).max(256),
    source: z.enum(['cache', 'local', 'peer']),
    ttlSec: z.number().nonnegative(),
  }),
])

/** The answer of `GET /providers/:address`. */
export interface ProvidersAnswer {
  address: Address
  providers: RankedProvider[]
  source: AnswerSource
}
