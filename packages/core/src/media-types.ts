/**
 * Media types from file names: what `ron-node publish` records in a directory manifest when no
 * type is given, and what a gateway serves the file with (SPEC §6a).
 *
 * @module
 */

const UTF8 = '; charset=utf-8'

/** Lower-case extension → media type. Text types carry `charset=utf-8`. */
const BY_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['html', `text/html${UTF8}`],
  ['htm', `text/html${UTF8}`],
  ['css', `text/css${UTF8}`],
  ['js', `text/javascript${UTF8}`],
  ['mjs', `text/javascript${UTF8}`],
  ['cjs', `text/javascript${UTF8}`],
  ['json', `application/json${UTF8}`],
  ['map', `application/json${UTF8}`],
  ['webmanifest', `application/manifest+json${UTF8}`],
  ['txt', `text/plain${UTF8}`],
  ['md', `text/markdown${UTF8}`],
  ['csv', `text/csv${UTF8}`],
  ['xml', `application/xml${UTF8}`],
  ['rss', `application/rss+xml${UTF8}`],
  ['atom', `application/atom+xml${UTF8}`],
  ['svg', 'image/svg+xml'],
  ['png', 'image/png'],
  ['apng', 'image/apng'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['gif', 'image/gif'],
  ['webp', 'image/webp'],
  ['avif', 'image/avif'],
  ['ico', 'image/x-icon'],
  ['bmp', 'image/bmp'],
  ['woff', 'font/woff'],
  ['woff2', 'font/woff2'],
  ['ttf', 'font/ttf'],
  ['otf', 'font/otf'],
  ['wasm', 'application/wasm'],
  ['pdf', 'application/pdf'],
  ['zip', 'application/zip'],
  ['gz', 'application/gzip'],
  ['tar', 'application/x-tar'],
  ['mp3', 'audio/mpeg'],
  ['ogg', 'audio/ogg'],
  ['wav', 'audio/wav'],
  ['mp4', 'video/mp4'],
  ['webm', 'video/webm'],
])

/**
 * Every extension {@link mediaTypeFor} knows (lower case, no dot) and its media type: for a page
 * that builds directory manifests itself (the node's dashboard) and must type files exactly as
 * `ron-node publish` does.
 *
 * @example
 * ```ts
 * mediaTypeTable().css // 'text/css; charset=utf-8'
 * ```
 */
export function mediaTypeTable(): Record<string, string> {
  return Object.fromEntries(BY_EXTENSION)
}

/** The media type of anything whose name says nothing: served as bytes, never sniffed. */
export const DEFAULT_MEDIA_TYPE = 'application/octet-stream'

/**
 * The media type for a file name or path, from its extension (case-insensitive);
 * {@link DEFAULT_MEDIA_TYPE} when the extension is unknown or missing.
 *
 * @example
 * ```ts
 * mediaTypeFor('css/site.css') // 'text/css; charset=utf-8'
 * mediaTypeFor('logo.PNG')     // 'image/png'
 * mediaTypeFor('LICENSE')      // 'application/octet-stream'
 * ```
 */
export function mediaTypeFor(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1)
  const dot = name.lastIndexOf('.')
  if (dot <= 0) return DEFAULT_MEDIA_TYPE
  return BY_EXTENSION.get(name.slice(dot + 1).toLowerCase()) ?? DEFAULT_MEDIA_TYPE
}
