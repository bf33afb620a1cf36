/**
 * From a name or a manifest address and a path to the file to serve (SPEC §6a "Gateway"): a name
 * resolves through index to its manifest; a directory manifest is read (this node's storage first,
 * then another node's, verified against its address) and kept, parsed, in a small cache (it is
 * immutable); the path picks an entry: `index.html` for a directory, a redirect that adds the `/`
 * a directory's relative links need, or `404.html` when present.
 *
 * @module
 */

import {
  InvalidReferenceError,
  NotFoundError,
  addressOf,
  isRonError,
  parseManifest,
  type Address,
  type AnyManifest,
  type DirEntry,
  type Manifest,
} from '@ron/core'
import type { InteropContext } from '../routes/context.js'
import { upstreamFailure } from '../upstream.js'
import { holdBackVerified } from './serve.js'
import type { ObjectReader } from './reader.js'

/** The largest manifest read (SPEC §6a). */
const MAX_MANIFEST_BYTES = 2 * 1024 * 1024
/** Parsed directory manifests kept, by address (most recently used last). */
const MANIFESTS_KEPT = 64

/** A file to serve. */
export interface FileEntry {
  content: Address
  type: string
}

/** What a path of a site comes to. */
export type Pick =
  | { kind: 'file'; entry: FileEntry; status: 200 | 404 }
  /** A directory asked for without its `/`: redirect to the same path with one. */
  | { kind: 'slash' }

/** A name resolved through index. */
export interface ResolvedName {
  manifestAddress: Address
  /** The file manifest, when index sent one (it checked it); a directory is read by address. */
  manifest: AnyManifest | undefined
}

/** A directory manifest indexed by path. */
type DirIndex = Map<string, DirEntry>

/** Name and manifest lookups for the gateway routes. */
export class Sites {
  readonly #dirs = new Map<Address, DirIndex>()

  constructor(
    private readonly s: InteropContext,
    private readonly reader: ObjectReader,
  ) {}

  /**
   * Resolves `name` through index.
   * @throws {@link NotFoundError} for a name index does not know; a 503 naming index when it fails.
   */
  async resolveName(name: string, signal: AbortSignal, corrId: string): Promise<ResolvedName> {
    const cfg = this.s.cfg()
    let body: { manifestAddress?: unknown; manifest?: unknown }
    try {
      const res = await this.s.upstreams.call(cfg.index.target, { op: 'index.resolve', method: 'GET', path: `/resolve/${name}`, timeoutMs: cfg.index.timeoutMs, idempotent: true, signal, corrId })
      if (res.status === 404) {
        await res.dump()
        throw new NotFoundError(`no such name: ${name}`, { details: { name } })
      }
      if (res.status >= 400) {
        await res.dump()
        throw new NotFoundError(`index cannot resolve ${name}`, { details: { name, status: res.status } })
      }
      body = await res.json<{ manifestAddress?: unknown; manifest?: unknown }>()
    } catch (e) {
      if (isRonError(e, 'NotFound') || signal.aborted) throw e
      throw upstreamFailure(e, 'index')
    }
    const manifestAddress = body.manifestAddress
    if (typeof manifestAddress !== 'string' || !manifestAddress.startsWith('b3:')) throw new NotFoundError(`no such name: ${name}`, { details: { name } })
    let manifest: AnyManifest | undefined
    try {
      manifest = body.manifest === undefined ? undefined : parseManifest(body.manifest)
    } catch {
      manifest = undefined
    }
    return { manifestAddress: manifestAddress as Address, manifest }
  }

  /**
   * Picks what to serve for `path` (decoded, relative, `''` for the root) of the manifest at
   * `address` (`known`: the manifest when already in hand).
   * @throws {@link NotFoundError} when nothing matches and the site has no `404.html`;
   *   {@link InvalidReferenceError} when the object is not a manifest.
   */
  async pick(address: Address, known: AnyManifest | undefined, path: string, signal: AbortSignal, corrId: string): Promise<Pick> {
    if (known !== undefined && known.kind !== 'dir') return pickFile(known, path)
    const dir = this.#dirs.get(address)
    if (dir !== undefined) {
      this.#dirs.delete(address)
      this.#dirs.set(address, dir)
      return pickDir(dir, path)
    }
    const manifest = await this.#readManifest(address, signal, corrId)
    if (manifest.kind !== 'dir') return pickFile(manifest, path)
    const index: DirIndex = new Map(manifest.entries.map((e) => [e.path, e]))
    this.#dirs.set(address, index)
    if (this.#dirs.size > MANIFESTS_KEPT) this.#dirs.delete(this.#dirs.keys().next().value!)
    return pickDir(index, path)
  }

  /** Reads and checks the manifest at `address` (its bytes hash to it: verified whatever the source). */
  async #readManifest(address: Address, signal: AbortSignal, corrId: string): Promise<AnyManifest> {
    const src = await this.reader.open(address, { method: 'GET', signal, corrId })
    let bytes: Uint8Array
    if (src.kind === 'local') {
      const len = Number(src.res.headers['content-length'])
      if (src.res.status !== 200 || len > MAX_MANIFEST_BYTES) {
        await src.res.dump()
        throw notAManifest(address, src.res.status !== 200 ? 'missing' : 'too_large')
      }
      bytes = await readAtMost(holdBackVerified(src.res.body, address), address)
    } else {
      const obj = src.obj
      if (obj.size > MAX_MANIFEST_BYTES) {
        await obj.release()
        throw notAManifest(address, 'too_large')
      }
      const body = obj.body()
      bytes = body instanceof Uint8Array ? body : await readAtMost(body, address)
    }
    if (addressOf(bytes) !== address) throw notAManifest(address, 'integrity')
    try {
      return parseManifest(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)))
    } catch {
      throw notAManifest(address, 'not_a_manifest')
    }
  }
}

/** A file manifest serves its content at the root and nothing else. */
function pickFile(m: Manifest, path: string): Pick {
  if (path !== '') throw new NotFoundError('this name is a single file: it has no paths', { details: { path } })
  return { kind: 'file', entry: { content: m.content, type: m.type }, status: 200 }
}

function pickDir(dir: DirIndex, path: string): Pick {
  const asDir = path === '' || path.endsWith('/')
  const hit = asDir ? dir.get(`${path}index.html`) : dir.get(path)
  if (hit !== undefined) return { kind: 'file', entry: { content: hit.content, type: hit.type }, status: 200 }
  if (!asDir && dir.has(`${path}/index.html`)) return { kind: 'slash' }
  const missing = dir.get('404.html')
  if (missing !== undefined) return { kind: 'file', entry: { content: missing.content, type: missing.type }, status: 404 }
  throw new NotFoundError('no such file in this site', { details: { path } })
}

/** The whole of `body`, refused past {@link MAX_MANIFEST_BYTES} (the rest is not read). */
async function readAtMost(body: AsyncIterable<Uint8Array>, address: Address): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const c of body) {
    size += c.byteLength
    if (size > MAX_MANIFEST_BYTES) throw notAManifest(address, 'too_large')
    chunks.push(c)
  }
  return Buffer.concat(chunks, size)
}

function notAManifest(address: Address, reason: string): InvalidReferenceError {
  return new InvalidReferenceError(`${address} is not a manifest the gateway can serve (${reason})`, { details: { address, reason } })
}
