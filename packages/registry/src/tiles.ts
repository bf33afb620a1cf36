/**
 * C2SP tlog-tiles (https://c2sp.org/tlog-tiles) coordinates and formats: tile paths
 * `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, where `<N>` is written in 3-digit path
 * elements, all but the last prefixed with `x` (1234067 → `x001/x234/067`); a tile holds up to
 * 256 hashes (a full one exactly 256, 8 192 bytes); an entry bundle is a sequence of big-endian
 * uint16 length-prefixed leaves, so a leaf is at most 65 535 bytes.
 *
 * Go's `sumdb/tlog` writes the same paths with the tile height in them (`tile/8/0/x001/234`, and
 * `tile/8/data/…` for entries): drop the `8/` and read `data` as `entries`.
 *
 * @module
 */

/** Hashes per full tile, and leaves per full entry bundle. */
export const TILE_WIDTH = 256
/** Levels of the Merkle tree one tile spans (log2 of {@link TILE_WIDTH}). */
export const TILE_HEIGHT = 8
/** The largest leaf an entry bundle can carry (uint16 length prefix). */
export const MAX_BUNDLE_LEAF = 0xffff

/** A tile (or an entry bundle when `level` is `'entries'`). */
export interface TileCoord {
  /** 0..63, or `'entries'`. */
  level: number | 'entries'
  /** Index of the tile within its level. */
  index: number
  /** Hashes (or leaves) in it: 256 for a full tile, 1..255 for a partial one. */
  width: number
}

/** `<N>` of a tile path: 3-digit elements, all but the last prefixed with `x`. */
export function encodeTileIndex(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`tile index ${n} out of range`)
  let s = String(n % 1000).padStart(3, '0')
  for (let rest = Math.floor(n / 1000); rest > 0; rest = Math.floor(rest / 1000)) s = `x${String(rest % 1000).padStart(3, '0')}/${s}`
  return s
}

/** The path of a tile, relative to the log's prefix (`tile/0/x001/234.p/17`). */
export function tilePath(t: TileCoord): string {
  const level = t.level === 'entries' ? 'entries' : String(t.level)
  const partial = t.width < TILE_WIDTH ? `.p/${t.width}` : ''
  return `tile/${level}/${encodeTileIndex(t.index)}${partial}`
}

const LEVEL = /^(0|[1-9][0-9]?)$/
const WIDTH = /^([1-9][0-9]{0,2})$/

/**
 * Parses the path elements after `tile/` (`['0', 'x001', '234.p', '17']`).
 * @returns the coordinates, or `undefined` when the path is not a canonical tile path
 */
export function parseTilePath(parts: readonly string[]): TileCoord | undefined {
  if (parts.length < 2) return undefined
  const l = parts[0]!
  let level: number | 'entries'
  if (l === 'entries') level = 'entries'
  else if (LEVEL.test(l) && Number(l) <= 63) level = Number(l)
  else return undefined
  let elems = parts.slice(1)
  let width = TILE_WIDTH
  const last = elems.at(-2)
  if (last !== undefined && last.endsWith('.p')) {
    const w = elems.at(-1)!
    if (!WIDTH.test(w) || Number(w) >= TILE_WIDTH) return undefined
    width = Number(w)
    elems = [...elems.slice(0, -2), last.slice(0, -2)]
  }
  let n = 0
  for (let i = 0; i < elems.length; i++) {
    const e = elems[i]!
    const digits = i < elems.length - 1 ? (e.startsWith('x') ? e.slice(1) : undefined) : e
    if (digits === undefined || !/^[0-9]{3}$/.test(digits)) return undefined
    n = n * 1000 + Number(digits)
    if (!Number.isSafeInteger(n)) return undefined
  }
  const coord: TileCoord = { level, index: n, width }
  // One spelling per tile: `x000/001` (a needless leading element) is not `001`.
  if (tilePath(coord) !== `tile/${parts.join('/')}`) return undefined
  return coord
}

/**
 * An entry bundle of `leaves` (each at most {@link MAX_BUNDLE_LEAF} bytes).
 * @throws RangeError for a leaf too large for a bundle
 */
export function encodeBundle(leaves: readonly Uint8Array[]): Buffer {
  let size = 0
  for (const l of leaves) {
    if (l.length > MAX_BUNDLE_LEAF) throw new RangeError(`a leaf of ${l.length} bytes does not fit an entry bundle`)
    size += 2 + l.length
  }
  const out = Buffer.allocUnsafe(size)
  let off = 0
  for (const l of leaves) {
    out.writeUInt16BE(l.length, off)
    out.set(l, off + 2)
    off += 2 + l.length
  }
  return out
}

/**
 * The leaves of an entry bundle.
 * @throws Error when the bytes are not a sequence of length-prefixed leaves
 */
export function parseBundle(bundle: Uint8Array): Uint8Array[] {
  const buf = Buffer.from(bundle.buffer, bundle.byteOffset, bundle.byteLength)
  const out: Uint8Array[] = []
  let off = 0
  while (off < buf.length) {
    if (off + 2 > buf.length) throw new Error('entry bundle ends inside a length prefix')
    const len = buf.readUInt16BE(off)
    if (off + 2 + len > buf.length) throw new Error('entry bundle ends inside a leaf')
    out.push(buf.subarray(off + 2, off + 2 + len))
    off += 2 + len
  }
  return out
}

/**
 * The widths of the tiles a tree of `size` leaves consists of, level by level, as C2SP counts
 * them: `full` tiles of 256 and, when the level has a remainder, one partial tile.
 */
export function tilesOf(size: number): Array<{ level: number; full: number; partial: number }> {
  const out: Array<{ level: number; full: number; partial: number }> = []
  for (let level = 0, span = 1; size >= span; level++, span *= TILE_WIDTH) {
    const hashes = Math.floor(size / span)
    out.push({ level, full: Math.floor(hashes / TILE_WIDTH), partial: hashes % TILE_WIDTH })
  }
  return out
}
