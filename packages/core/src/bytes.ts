/**
 * Byte-stream helpers shared by transports, clients and tests.
 *
 * @module
 */

/**
 * Reads a stream of chunks to the end and returns them as one plain `Uint8Array` (a view of the
 * chunk when there was exactly one, so a single-chunk body is not copied; never a `Buffer`, so
 * results compare equal whatever produced them).
 *
 * @example
 * ```ts
 * const bytes = await collectBytes(res.body)
 * ```
 */
export async function collectBytes(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const c of body) {
    chunks.push(c)
    size += c.byteLength
  }
  if (chunks.length === 1) {
    const c = chunks[0]!
    return c.constructor === Uint8Array ? c : new Uint8Array(c.buffer, c.byteOffset, c.byteLength)
  }
  const out = new Uint8Array(size)
  let off = 0
  for (const c of chunks) {
    out.set(c, off)
    off += c.byteLength
  }
  return out
}
