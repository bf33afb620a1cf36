/**
 * Directory manifests (SPEC.md §6a "Directory manifests"): `{"kind":"dir","entries":[{path,
 * content, size, type}, …]}` lists the files of a directory tree, each by the address of its
 * content. Paths are relative and normalised (no leading `/`, no `.`, `..` or empty segments),
 * unique and sorted (by Unicode code point, which is UTF-8 byte order); no path is both a file and
 * the directory of another; at most {@link MAX_DIR_ENTRIES} entries and {@link MAX_MANIFEST_BYTES}
 * of JSON. Stored in storage like any object and bound to names like a file manifest.
 *
 * @example
 * ```ts
 * import { dirManifest, mediaTypeFor } from '@ron/core'
 *
 * const { bytes } = dirManifest([{ path: 'index.html', content: htmlAddress, size: 120, type: mediaTypeFor('index.html') }])
 * await storage.put(bytes) // the manifest's address is what a name binds
 * ```
 *
 * @module
 */

import { z } from 'zod'
import { MalformedError, OverLimitError } from './errors.js'
import { addressSchema, manifestSchema, mediaTypeSchema, type Manifest } from './contracts.js'
import { schemaError } from './http/context.js'

/** Most entries a directory manifest may list (SPEC §6a). */
export const MAX_DIR_ENTRIES = 10_000
/** Largest manifest of either kind, in bytes of JSON (SPEC §6a; index's manifest size cap). */
export const MAX_MANIFEST_BYTES = 2 * 1024 * 1024
/** Longest entry path, in UTF-16 code units. */
const MAX_PATH_LENGTH = 1024
/** Longest segment of an entry path. */
const MAX_SEGMENT_LENGTH = 255

// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const FORBIDDEN_CHARS = /[\u0000-\u001f\u007f\\]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when `path` is a valid entry path: relative and normalised (no leading or trailing `/`, no
 * empty, `.` or `..` segment), without control characters, `\` or lone surrogates, at most 1024
 * characters with segments of at most 255.
 *
 * @example
 * ```ts
 * isEntryPath('css/site.css') // true
 * isEntryPath('../etc/passwd') // false
 * ```
 */
export function isEntryPath(path: unknown): path is string {
  if (typeof path !== 'string' || path.length === 0 || path.length > MAX_PATH_LENGTH) return false
  if (FORBIDDEN_CHARS.test(path)) return false
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.' || seg === '..' || seg.length > MAX_SEGMENT_LENGTH) return false
  }
  return true
}

/**
 * Orders entry paths by Unicode code point (the same as UTF-8 byte order), the order a directory
 * manifest lists its entries in.
 * @returns a negative number when `a` sorts first, positive when `b` does, 0 when equal.
 */
export function compareEntryPaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** One file of a {@link DirManifest}. */
export const dirEntrySchema = z.strictObject({
  /** Relative, normalised path (see {@link isEntryPath}), e.g. `css/site.css`. */
  path: z.string().refine(isEntryPath, {
    message: 'expected a relative, normalised path: no leading "/", no ".", ".." or empty segments, no control characters or "\\", at most 1024 characters',
  }),
  /** Address of the file's content. */
  content: addressSchema,
  /** Size of the content in bytes. */
  size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  /** Media type the gateway serves the file with. */
  type: mediaTypeSchema,
})

/** See {@link dirEntrySchema}. */
export type DirEntry = z.infer<typeof dirEntrySchema>

/** The first problem of a list of entries (order, duplicates, a file that is also a directory), or undefined. */
function entriesProblem(entries: readonly DirEntry[]): { index: number; message: string } | undefined {
  const paths = new Set<string>()
  for (let i = 0; i < entries.length; i++) {
    const p = entries[i]!.path
    if (i > 0) {
      const c = compareEntryPaths(entries[i - 1]!.path, p)
      if (c === 0) return { index: i, message: `duplicate path '${p}'` }
      if (c > 0) return { index: i, message: 'entries must be sorted by path (Unicode code point order)' }
    }
    paths.add(p)
  }
  for (let i = 0; i < entries.length; i++) {
    const p = entries[i]!.path
    for (let slash = p.indexOf('/'); slash !== -1; slash = p.indexOf('/', slash + 1)) {
      if (paths.has(p.slice(0, slash))) return { index: i, message: `'${p.slice(0, slash)}' is a file and the directory of '${p}'` }
    }
  }
  return undefined
}

/**
 * A directory manifest (SPEC §6a): `kind: "dir"` and its entries, sorted and unique by path, at
 * most {@link MAX_DIR_ENTRIES}.
 */
export const dirManifestSchema = z
  .strictObject({
    kind: z.literal('dir'),
    entries: z.array(dirEntrySchema).max(MAX_DIR_ENTRIES),
  })
  .superRefine((m, ctx) => {
    const problem = entriesProblem(m.entries)
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['entries', problem.index, 'path'], message: problem.message })
  })

/** See {@link dirManifestSchema}. */
export type DirManifest = z.infer<typeof dirManifestSchema>

/** A manifest of either kind: a file ({@link Manifest}) or a directory ({@link DirManifest}). */
export type AnyManifest = Manifest | DirManifest

/** True when `m` is a directory manifest. */
export function isDirManifest(m: AnyManifest): m is DirManifest {
  return m.kind === 'dir'
}

/**
 * Validates a parsed JSON value as a manifest of either kind (by its `kind`: `"dir"`, else a file
 * manifest).
 * @throws {@link MalformedError} naming the first offending field.
 * @example
 * ```ts
 * const m = parseManifest(JSON.parse(text))
 * if (isDirManifest(m)) console.log(m.entries.length)
 * ```
 */
export function parseManifest(value: unknown): AnyManifest {
  const dir = value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'dir'
  try {
    return dir ? dirManifestSchema.parse(value) : manifestSchema.parse(value)
  } catch (e) {
    throw schemaError(e)
  }
}

/**
 * Builds a directory manifest from `entries` in any order: sorts them, checks them, and
 * serialises the manifest as compact JSON with a fixed key order, so the same files always make
 * the same bytes (and the same address).
 * @returns the manifest and its bytes, ready to store.
 * @throws {@link MalformedError} for a bad entry (naming it), {@link OverLimitError} when the
 *   manifest would pass {@link MAX_MANIFEST_BYTES}.
 */
export function dirManifest(entries: Iterable<DirEntry>): { manifest: DirManifest; bytes: Uint8Array } {
  const list = [...entries].map((e) => ({ path: e.path, content: e.content, size: e.size, type: e.type }))
  if (list.length > MAX_DIR_ENTRIES) {
    throw new MalformedError(`a directory manifest lists at most ${MAX_DIR_ENTRIES} entries, not ${list.length}`, { details: { field: 'entries', reason: 'too_many' } })
  }
  list.sort((a, b) => compareEntryPaths(a.path, b.path))
  const manifest = parseManifest({ kind: 'dir', entries: list }) as DirManifest
  const bytes = new TextEncoder().encode(JSON.stringify(manifest))
  if (bytes.byteLength > MAX_MANIFEST_BYTES) {
    throw new OverLimitError(`the directory manifest would be ${bytes.byteLength} bytes, over ${MAX_MANIFEST_BYTES}`, { details: { limit: MAX_MANIFEST_BYTES, size: bytes.byteLength } })
  }
  return { manifest, bytes }
}
