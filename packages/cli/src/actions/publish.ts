/**
 * `ron-node publish <dir> [--name <name>]`: a directory to a site in one command (issue 23). Every
 * file is hashed here and uploaded unless the node already has it (a `HEAD` first, so
 * republishing after one change uploads that file only); then the directory manifest (SPEC §6a),
 * the same way; then the name is bound by compare-and-set against the binding read just before,
 * at the name's home node (a 409 naming another home is retried there, with the same token). It
 * prints the gateway URL of the site: the name's own origin, `http://<label>.localhost:<port>/`,
 * when the node's interop is on this machine.
 *
 * The token needs `storage:write` and, with `--name`, `index:write` for that name: `ron-node token
 * issue --name-prefix docs.alice` makes one limited to `docs.alice` and the names under it.
 *
 * @module
 */

import { createReadStream } from 'node:fs'
import { lstat, opendir } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import {
  HttpTransport,
  MAX_DIR_ENTRIES,
  addressOf,
  compareEntryPaths,
  createBlake3,
  dirManifest,
  gatewayLabel,
  isEntryPath,
  isRonError,
  mediaTypeFor,
  nameWithinPrefix,
  parseName,
  toAddress,
  type Address,
  type DirEntry,
} from '@ron/core'
import { transportTls } from '../client-tls.js'
import { CLIENT_TIMEOUT_MS, discoverService, noTokenError, precheckToken, resolveNodeUrl, resolveToken, type ClientOptions } from '../client.js'
import { errnoText } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { createProgress, formatBytes, type Progress } from '../progress.js'

/** Arguments of {@link publishCommand}. */
export interface PublishArgs extends ClientOptions {
  /** The directory to publish. */
  dir: string
  /** The name to bind (e.g. `docs.alice`); without it, the site is reachable by its manifest address. */
  name?: string | undefined
  /** Include files and directories whose names start with `.` (`.well-known` always is). */
  hidden?: boolean | undefined
  json?: boolean | undefined
  /** Force the progress bar on or off. @default stderr is a TTY */
  progress?: boolean | undefined
}

/** What {@link publishCommand} did. */
export interface PublishOutcome {
  manifestAddress: Address
  name: string | undefined
  /** What the name was bound to before (`null`: it was new); absent without a name. */
  previous?: Address | null
  /** Files in the manifest. */
  files: number
  /** Paths uploaded (the node did not have them), the manifest excluded. */
  uploaded: string[]
  /** True when the manifest itself was uploaded (it is new to the node). */
  manifestUploaded: boolean
  /** The site's URL: its own origin when the gateway is on this machine, else a path URL; absent without interop. */
  url?: string
  /** The site on the path gateway (`/n/<name>/` or `/o/<manifest>/`). */
  pathUrl?: string
  /** Symbolic links and other non-files that were left out. */
  skipped: string[]
}

/** A file found in the directory. */
interface FileToPublish {
  path: string
  abs: string
  size: number
}

/** Uploads at once. */
const PARALLEL = 4

/**
 * Walks `root`: regular files only (symbolic links and special files are listed as skipped, never
 * followed: a link could point out of the directory), hidden ones only with `hidden`.
 * @throws {@link CliError} for a path that cannot be in a manifest or more than 10,000 files.
 */
async function walk(root: string, hidden: boolean): Promise<{ files: FileToPublish[]; skipped: string[] }> {
  const files: FileToPublish[] = []
  const skipped: string[] = []
  const visit = async (dir: string): Promise<void> => {
    let handle
    try {
      handle = await opendir(dir)
    } catch (e) {
      throw new CliError(`cannot read ${dir}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
    }
    for await (const d of handle) {
      const abs = join(dir, d.name)
      const path = relative(root, abs).split(sep).join('/')
      if (d.name.startsWith('.') && !hidden && d.name !== '.well-known') continue
      if (d.isDirectory()) await visit(abs)
      else if (d.isFile()) {
        if (!isEntryPath(path)) throw new CliError(`${JSON.stringify(relative(root, abs))}: this file name cannot be published (control characters, "\\" or a segment over 255 characters)`, ExitCode.Usage)
        files.push({ path, abs, size: (await lstat(abs)).size })
        if (files.length > MAX_DIR_ENTRIES) throw new CliError(`${root} has more than ${MAX_DIR_ENTRIES} files: a directory manifest lists at most that many`, ExitCode.Usage)
      } else skipped.push(path)
    }
  }
  let st
  try {
    st = await lstat(root)
  } catch (e) {
    throw new CliError(`cannot read ${root}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  if (!st.isDirectory()) throw new CliError(`${root} is not a directory (to store one file: ron-node put)`, ExitCode.Usage)
  await visit(root)
  files.sort((a, b) => compareEntryPaths(a.path, b.path))
  return { files, skipped }
}

/** The `namePrefix` caveat of a compact JWS (not verified: the node does that), if any. */
function namePrefixOf(token: string): string | undefined {
  try {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { ron?: { namePrefix?: unknown } }
    return typeof claims.ron?.namePrefix === 'string' ? claims.ron.namePrefix : undefined
  } catch {
    return undefined
  }
}

/** The BLAKE3 address of a file, streamed. */
async function hashFile(abs: string): Promise<Address> {
  const h = createBlake3()
  for await (const chunk of createReadStream(abs, { highWaterMark: 256 * 1024 })) h.update(chunk as Buffer)
  return toAddress(h.digest())
}

async function* counted(abs: string, progress: Progress): AsyncGenerator<Uint8Array> {
  for await (const chunk of createReadStream(abs, { highWaterMark: 256 * 1024 })) {
    progress.tick((chunk as Buffer).byteLength)
    yield chunk as Buffer
  }
}

/** Stores `object` on the storage at `url` unless it is there already. */
async function storeAt(url: string, object: { address: Address; bytes: Uint8Array }, token: string): Promise<void> {
  const transport = new HttpTransport({ targets: { storage: url }, timeoutMs: 30_000, breaker: false, ...transportTls() })
  try {
    const { createStorageClient } = await import('@ron/storage')
    const storage = createStorageClient(transport, { target: 'storage', token })
    if ((await storage.head(object.address)) === undefined) await storage.put(object.bytes, { expect: object.address })
  } finally {
    await transport.close()
  }
}

/**
 * Makes the index at `indexUrl` (the node the user talks to, not the name's home) read `name`
 * afresh from the home, so its gateway serves the new binding at once rather than the one it read
 * before the write and keeps for its cache TTL. Best effort: the write is done either way.
 */
export async function refreshName(indexUrl: string, name: string, token: string): Promise<void> {
  const { createIndexClient } = await import('@ron/index')
  const transport = new HttpTransport({ targets: { index: indexUrl }, timeoutMs: 10_000, breaker: false, ...transportTls() })
  try {
    await createIndexClient(transport, { token }).resolve(name, { fresh: true })
  } catch {
    // The binding is written at the home; this node's cache expires on its own.
  } finally {
    await transport.close()
  }
}

/** Runs `fn` over `items`, `n` at a time; the first failure stops new work and is thrown. */
async function pool<T>(items: readonly T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next++]!
      try {
        await fn(item)
      } catch (e) {
        failed = true
        throw e
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker))
}

/** The site's URLs given the node's interop URL. */
export function siteUrls(interopUrl: string, name: string | undefined, manifestAddress: Address): { url: string; pathUrl: string } {
  const u = new URL(interopUrl)
  const base = u.href.replace(/\/+$/, '')
  const pathUrl = name === undefined ? `${base}/o/${manifestAddress}/` : `${base}/n/${name}/`
  const label = name === undefined ? undefined : gatewayLabel(name)
  const host = u.hostname.replace(/^\[|\]$/g, '')
  // *.localhost reaches loopback only: the name's own origin when the gateway is on this machine.
  const local = host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
  if (label === undefined || !local) return { url: pathUrl, pathUrl }
  return { url: `${u.protocol}//${label}.localhost${u.port === '' ? '' : `:${u.port}`}/`, pathUrl }
}

/**
 * Publishes the directory (see the module comment) and prints what it did.
 * @throws {@link CliError} for a bad directory, no token, or a name that changed while publishing;
 *   RON errors from the node (mapped to exit codes by the caller).
 */
export async function publishCommand(args: PublishArgs, out: NodeJS.WritableStream = process.stdout): Promise<PublishOutcome> {
  const name = args.name === undefined ? undefined : parseName(args.name, 'name')
  const nodeUrl = resolveNodeUrl(args)
  const { token, tokenFile } = await resolveToken(args)
  if (token === undefined) throw noTokenError(nodeUrl, tokenFile)
  precheckToken(token, 'storage:write')
  if (name !== undefined) {
    precheckToken(token, 'index:write')
    // A token limited to other names would upload everything and then be refused: say so first.
    const prefix = namePrefixOf(token)
    if (prefix !== undefined && !nameWithinPrefix(name, prefix)) {
      throw new CliError(`token cannot publish ${name}: it allows names under '${prefix}' only`, ExitCode.Auth)
    }
  }
  const { files, skipped } = await walk(args.dir, args.hidden === true)
  if (files.length === 0) throw new CliError(`${args.dir} has no files to publish`, ExitCode.Usage)

  const storageUrl = await discoverService(nodeUrl, 'storage')
  const indexUrl = name === undefined ? undefined : await discoverService(nodeUrl, 'index')
  let interopUrl: string | undefined
  try {
    interopUrl = await discoverService(nodeUrl, 'interop')
  } catch {
    interopUrl = undefined
  }
  const transport = new HttpTransport({ targets: { storage: storageUrl, ...(indexUrl === undefined ? {} : { index: indexUrl }) }, timeoutMs: CLIENT_TIMEOUT_MS, breaker: false, ...transportTls() })
  const { createStorageClient } = await import('@ron/storage')
  const storage = createStorageClient(transport, { target: 'storage', token, timeoutMs: CLIENT_TIMEOUT_MS })
  let progress: Progress = createProgress({ label: 'publish', enabled: false })
  try {
    // Hash first: what the node already has is never sent.
    const entries: DirEntry[] = []
    const missing: Array<FileToPublish & { address: Address }> = []
    await pool(files, PARALLEL, async (f) => {
      const address = await hashFile(f.abs).catch((e: unknown) => {
        throw new CliError(`cannot read ${f.abs}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
      })
      entries.push({ path: f.path, content: address, size: f.size, type: mediaTypeFor(f.path) })
      if ((await storage.head(address)) === undefined) missing.push({ ...f, address })
    })
    missing.sort((a, b) => compareEntryPaths(a.path, b.path))
    const total = missing.reduce((n, f) => n + f.size, 0)
    progress = createProgress({ label: 'publish', total, ...(args.progress === undefined ? {} : { enabled: args.progress }) })
    const p = progress
    await pool(missing, PARALLEL, async (f) => {
      // X-Expect-Address: a file that changed after it was hashed is refused, never published wrong.
      await storage.put(counted(f.abs, p), { expect: f.address, size: f.size })
    })
    const { bytes } = dirManifest(entries)
    const manifestAddress = addressOf(bytes)
    const manifestUploaded = (await storage.head(manifestAddress)) === undefined
    if (manifestUploaded) await storage.put(bytes, { expect: manifestAddress })
    progress.done()

    const outcome: PublishOutcome = { manifestAddress, name, files: files.length, uploaded: missing.map((f) => f.path), manifestUploaded, skipped }
    if (name !== undefined && indexUrl !== undefined) outcome.previous = await bindName(indexUrl, name, { address: manifestAddress, bytes }, token)
    if (interopUrl !== undefined) Object.assign(outcome, siteUrls(interopUrl, name, manifestAddress))
    const lines = [
      `published ${files.length} file${files.length === 1 ? '' : 's'}: ${missing.length} uploaded (${formatBytes(total)}), ${files.length - missing.length} already on the node`,
      `manifest  ${manifestAddress}${manifestUploaded ? '' : ' (unchanged)'}`,
      ...(name === undefined ? [] : [`name      ${name} → ${manifestAddress}${outcome.previous === manifestAddress ? ' (unchanged)' : outcome.previous === null ? ' (new)' : ` (was ${outcome.previous})`}`]),
      ...(skipped.length === 0 ? [] : [`skipped   ${skipped.join(', ')} (not regular files)`]),
      ...(outcome.url === undefined ? [] : [`open      ${outcome.url}`]),
    ]
    out.write(args.json === true ? `${JSON.stringify(outcome)}\n` : `${lines.join('\n')}\n`)
    return outcome
  } catch (e) {
    progress.clear()
    throw e
  } finally {
    await transport.close()
  }
}

/**
 * Binds `name` to the manifest by compare-and-set against its binding now (read fresh), at its
 * home: a 409 naming another home is retried there once, with the same token, after the manifest
 * is stored on the home node too (its index checks a manifest in its own storage; the files
 * themselves are read from wherever they are).
 * @returns the previous binding (`null`: none).
 * @throws {@link CliError} when the name changed between the read and the write.
 */
export async function bindName(indexUrl: string, name: string, manifest: { address: Address; bytes: Uint8Array }, token: string): Promise<Address | null> {
  const { createIndexClient } = await import('@ron/index')
  const manifestAddress = manifest.address
  let url = indexUrl
  for (let attempt = 0; ; attempt++) {
    const transport = new HttpTransport({ targets: { index: url }, timeoutMs: 30_000, breaker: false, ...transportTls() })
    try {
      const index = createIndexClient(transport, { token })
      let previous: Address | null
      try {
        previous = ((await index.resolve(name, { fresh: true })) as { manifestAddress?: Address }).manifestAddress ?? null
      } catch (e) {
        if (!isRonError(e, 'NotFound')) throw e
        previous = null
      }
      if (previous === manifestAddress) return previous
      try {
        await index.setName(name, manifestAddress, { expectedPrevious: previous })
        if (url !== indexUrl) await refreshName(indexUrl, name, token)
        return previous
      } catch (e) {
        if (!isRonError(e, 'Conflict')) throw e
        const d = e.details as { reason?: unknown; home?: unknown }
        if (d.reason === 'home_elsewhere' && typeof d.home === 'string' && attempt === 0) {
          const home = d.home.replace(/\/+$/, '')
          await storeAt(await discoverService(home, 'storage'), manifest, token)
          url = await discoverService(home, 'index')
          continue
        }
        throw new CliError(`${name} changed while publishing (someone else published it): run publish again`, ExitCode.Error, { cause: e })
      }
    } finally {
      await transport.close()
    }
  }
}
