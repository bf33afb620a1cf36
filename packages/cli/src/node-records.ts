/**
 * Where a running node says where it is, so that the client commands find it and its token:
 *
 * - `<data dir>/run.json` names the node running on that data directory (its pid, admin URL,
 *   service URLs, node id): `--data-dir` alone talks to that node, and a `--node` that is not one
 *   of its URLs is a mismatch;
 * - `<runtime dir>/nodes/<host>_<port>.json` (the same record, keyed by the admin URL) names the
 *   data directory of the node at a URL: `--node` alone finds that node's `admin.token`.
 *
 * Neither file holds a token: the token stays in `<data dir>/admin.token` (mode 0600). The runtime
 * directory is the user's own (`RON_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/ron`, else
 * `~/.local/state/ron/run`), mode 0700; a directory or record owned by another user, writable by
 * others or a symlink is ignored, so another local user cannot point the CLI at a data directory
 * (or a URL) of their choosing. A record whose process is gone is ignored (and pruned by the next
 * start). Only `node:fs`, `node:os` and `node:path`: the client commands load this module.
 *
 * @module
 */

import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { processAlive } from './data-dir.js'

/** What a running node records about itself. */
export interface NodeRecord {
  /** The node process. */
  pid: number
  nodeId: string
  /** Admin URL, as `start` prints it. */
  admin: string
  /** Service name → base URL. */
  services: Record<string, string>
  /** Absolute data directory. */
  dataDir: string
}

/** The user's runtime directory of node records. */
export function runtimeDir(env: Record<string, string | undefined> = process.env, home: string = homedir()): string {
  const own = env['RON_RUNTIME_DIR']
  if (own !== undefined && own !== '') return resolve(own)
  const xdg = env['XDG_RUNTIME_DIR']
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'ron')
  return join(home, '.local', 'state', 'ron', 'run')
}

const uid = (): number | undefined => (typeof process.getuid === 'function' ? process.getuid() : undefined)

/** True when `path` is a real (not symlinked) file or directory of ours that no one else can write. */
function ours(path: string, dir: boolean): boolean {
  try {
    const st = lstatSync(path)
    if (dir ? !st.isDirectory() : !st.isFile()) return false
    const me = uid()
    if (me !== undefined && st.uid !== me) return false
    return (st.mode & 0o022) === 0
  } catch {
    return false
  }
}

/** The URL without a trailing slash, lower-cased scheme and host; undefined when not a URL. */
export function normalizeNodeUrl(raw: string): string | undefined {
  try {
    return new URL(raw).href.replace(/\/+$/, '')
  } catch {
    return undefined
  }
}

function keyOf(admin: string): string {
  const u = new URL(admin)
  return `${u.hostname.replace(/[^A-Za-z0-9.-]/g, '_')}_${u.port === '' ? (u.protocol === 'https:' ? '443' : '80') : u.port}`
}

function parseRecord(text: string): NodeRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<NodeRecord>
    if (typeof r.pid !== 'number' || typeof r.admin !== 'string' || typeof r.dataDir !== 'string' || typeof r.nodeId !== 'string' || r.services === null || typeof r.services !== 'object') return undefined
    return r as NodeRecord
  } catch {
    return undefined
  }
}

function readLive(path: string): NodeRecord | undefined {
  if (!ours(path, false)) return undefined
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
  const r = parseRecord(text)
  return r !== undefined && processAlive(r.pid) ? r : undefined
}

/** True when `url` is the record's admin URL or one of its service URLs. */
export function recordServes(record: NodeRecord, url: string): boolean {
  const u = normalizeNodeUrl(url)
  if (u === undefined) return false
  return [record.admin, ...Object.values(record.services)].some((x) => normalizeNodeUrl(x) === u)
}

/** The record of the node running on `dataDir`, or undefined when none runs there. */
export function recordOfDataDir(dataDir: string): NodeRecord | undefined {
  const r = readLive(join(resolve(dataDir), 'run.json'))
  return r !== undefined && resolve(r.dataDir) === resolve(dataDir) ? r : undefined
}

/** The record of a running node of this user that serves `url` (admin or service URL), if any. */
export function recordForUrl(url: string, env: Record<string, string | undefined> = process.env): NodeRecord | undefined {
  const dir = join(runtimeDir(env), 'nodes')
  if (!ours(runtimeDir(env), true) || !ours(dir, true)) return undefined
  let names: string[]
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'))
  } catch {
    return undefined
  }
  for (const n of names.slice(0, 1000)) {
    const r = readLive(join(dir, n))
    if (r === undefined || !recordServes(r, url)) continue
    // The data dir's own run.json is the authority: it must be the same live node and serve `url`,
    // so a runtime record cannot tie a URL to another node's data dir (and its token).
    const own = recordOfDataDir(r.dataDir)
    if (own !== undefined && own.pid === r.pid && own.nodeId === r.nodeId && recordServes(own, url)) return own
  }
  return undefined
}

function writePrivate(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, text, { mode: 0o600 })
  renameSync(tmp, path)
}

/** Creates (or makes private) a directory of ours; false when it is someone else's. */
function privateDir(path: string): boolean {
  mkdirSync(path, { recursive: true, mode: 0o700 })
  const st = lstatSync(path)
  const me = uid()
  if (!st.isDirectory() || (me !== undefined && st.uid !== me)) return false
  if ((st.mode & 0o077) !== 0) chmodSync(path, 0o700)
  return true
}

/**
 * Writes the records of a node that is ready; returns a function removing them (at stop). The
 * runtime record is skipped (with `onWarn`) when the runtime directory is not usable.
 */
export function writeNodeRecords(record: NodeRecord, env: Record<string, string | undefined>, onWarn: (msg: string, err?: unknown) => void): () => void {
  const own = join(record.dataDir, 'run.json')
  writePrivate(own, `${JSON.stringify(record)}\n`)
  let indexed: string | undefined
  try {
    const base = runtimeDir(env)
    const dir = join(base, 'nodes')
    if (privateDir(base) && privateDir(dir)) {
      for (const n of readdirSync(dir)) {
        const p = join(dir, n)
        if (n.endsWith('.json') && ours(p, false) && readLive(p) === undefined) rmSync(p, { force: true })
      }
      indexed = join(dir, `${keyOf(record.admin)}.json`)
      writePrivate(indexed, `${JSON.stringify(record)}\n`)
    } else onWarn(`runtime directory ${base} belongs to another user; ron-node --node will not find this node's token`)
  } catch (e) {
    onWarn('could not write the node record in the runtime directory; ron-node --node will not find this node', e)
  }
  return () => {
    for (const p of [own, indexed]) {
      if (p === undefined) continue
      // Only our own record: a later node may have replaced it.
      try {
        if (parseRecord(readFileSync(p, 'utf8'))?.pid === record.pid) rmSync(p, { force: true })
      } catch {
        // already gone
      }
    }
  }
}
