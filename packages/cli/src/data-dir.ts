/**
 * Where a node keeps its state, following each platform's conventions, and the checks run before
 * a node uses it.
 *
 * @module
 */

import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { constants, readFileSync, unlinkSync } from 'node:fs'
import { access, chmod, link, lstat, mkdir, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve, win32 } from 'node:path'
import type { Logger } from '@ron/core'
import { CliError, ExitCode } from './exit-codes.js'

/** What {@link defaultDataDir} looks at; injectable for tests. */
export interface DataDirEnvironment {
  /** @default process.platform */
  platform?: NodeJS.Platform
  /** @default process.env */
  env?: Record<string, string | undefined>
  /** @default os.homedir() */
  home?: string
}

/**
 * The default data directory:
 * - `RON_DATA_DIR` when set;
 * - Linux and other Unix: `$XDG_DATA_HOME/ron` when it is an absolute path (relative values are
 *   ignored, as the XDG spec says), else `~/.local/share/ron`;
 * - macOS: `~/Library/Application Support/ron`;
 * - Windows: `%LOCALAPPDATA%\ron`, else `~\AppData\Local\ron`.
 *
 * @example
 * ```ts
 * defaultDataDir({ platform: 'linux', env: {}, home: '/home/ada' }) // '/home/ada/.local/share/ron'
 * ```
 */
export function defaultDataDir(environment: DataDirEnvironment = {}): string {
  const platform = environment.platform ?? process.platform
  const env = environment.env ?? process.env
  const home = environment.home ?? homedir()
  const override = env['RON_DATA_DIR']
  if (override !== undefined && override !== '') return resolve(override)
  if (platform === 'win32') {
    const local = env['LOCALAPPDATA']
    return local !== undefined && local !== '' ? win32.join(local, 'ron') : win32.join(home, 'AppData', 'Local', 'ron')
  }
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', 'ron')
  const xdg = env['XDG_DATA_HOME']
  return xdg !== undefined && isAbsolute(xdg) ? join(xdg, 'ron') : join(home, '.local', 'share', 'ron')
}

/** Files and folders inside a data directory. */
export interface DataDirLayout {
  /** The data directory itself (absolute). */
  root: string
  /** `<root>/keys`: the issuer key (mode 0700). */
  keys: string
  /** `<root>/keys/issuer.json`: the capability issuer key (mode 0600). */
  issuerKey: string
  /** `<root>/admin.token`: an all-scopes token (mode 0600). */
  adminToken: string
  /** `<root>/storage`: storage's objects. */
  storage: string
  /** `<root>/lock`: holds the pid of the node using the directory. */
  lock: string
  /** `<root>/node.json`: the data directory format and the node id. */
  nodeFile: string
  /** `<root>/keys/node.json`: the node key (private Ed25519 JWK, mode 0600). */
  nodeKey: string
  /** `<root>/peers.json`: what the node learnt about its peers (node ids, service URLs). */
  peersFile: string
  /** `<root>/pins.json`: the pinned `{nodeId, nodeKey}` of each peer (mode 0600). */
  pinsFile: string
}

/** The paths of a data directory's contents. */
export function dataDirLayout(root: string): DataDirLayout {
  const abs = resolve(root)
  return {
    root: abs,
    keys: join(abs, 'keys'),
    issuerKey: join(abs, 'keys', 'issuer.json'),
    adminToken: join(abs, 'admin.token'),
    storage: join(abs, 'storage'),
    lock: join(abs, 'lock'),
    nodeFile: join(abs, 'node.json'),
    nodeKey: join(abs, 'keys', 'node.json'),
    peersFile: join(abs, 'peers.json'),
    pinsFile: join(abs, 'pins.json'),
  }
}

/** Options of {@link prepareDataDir}. */
export interface PrepareDataDirOptions {
  /** Receives the warning when loose permissions of the directory are tightened. @default none */
  logger?: Logger
}

/**
 * Checks that an existing data directory is private: a real directory (not a symlink), owned by
 * the current user, and not accessible by group or others. Loose permissions on a directory the
 * user owns are tightened to 0700 with a warning. The ownership and mode checks are skipped on
 * Windows (no POSIX uid).
 * @throws {@link CliError} (exit 1) naming the path when the directory is a symlink, owned by
 *   someone else, a shared sticky directory such as `/tmp` itself, or cannot be made private.
 */
export async function checkDataDirSafety(root: string, logger?: Logger): Promise<void> {
  let st
  try {
    st = await lstat(root)
  } catch (e) {
    throw new CliError(`cannot inspect data directory ${root}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  if (st.isSymbolicLink()) throw new CliError(`data directory ${root} is a symbolic link; point --data-dir at the real directory`)
  if (!st.isDirectory()) throw new CliError(`data directory ${root} is not a directory; pick another with --data-dir`)
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return
  const uid = process.getuid()
  if (st.uid !== uid) {
    throw new CliError(`data directory ${root} is owned by uid ${st.uid}, not by the current user (uid ${uid}); pick another with --data-dir`)
  }
  const mode = st.mode & 0o777
  // A sticky directory (like /tmp) is shared by design: never lock it down, use a subdirectory.
  if ((st.mode & 0o1000) !== 0) {
    throw new CliError(`data directory ${root} is a shared (sticky) directory; use a subdirectory of it as --data-dir`)
  }
  if ((mode & 0o077) !== 0) {
    try {
      await chmod(root, 0o700)
    } catch (e) {
      throw new CliError(`data directory ${root} is accessible by others (mode ${mode.toString(8)}) and cannot be made private: ${errnoText(e)}`, ExitCode.Error, { cause: e })
    }
    logger?.warn({ path: root, mode: mode.toString(8) }, 'data directory was accessible by group or others; changed its mode to 700')
  }
}

/**
 * The state letter of process `pid` (`R`, `S`, `Z` for a zombie, …), or undefined when it cannot be
 * read. Linux: `/proc/<pid>/stat` (the field after the parenthesised command name, which may itself
 * hold spaces or parentheses); other Unix: `ps -o stat= -p <pid>`.
 */
export function processState(pid: number, platform: NodeJS.Platform = process.platform): string | undefined {
  try {
    if (platform === 'linux') {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 1).trim()[0]
    }
    if (platform === 'win32') return undefined
    const out = execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 })
    return out.trim()[0]
  } catch {
    return undefined
  }
}

/**
 * True when a process with `pid` exists and is not a zombie (EPERM: it exists but belongs to
 * another user). A zombie, killed but not yet reaped by its parent, still answers signal 0 but will
 * never run again, so its lock is stale.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'EPERM') return false
  }
  const state = processState(pid)
  return state !== 'Z' && state !== 'X'
}

/** The pid in a lock file, or undefined when the file is missing or does not hold one. */
async function lockHolder(path: string): Promise<number | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  const pid = Number.parseInt(text.trim(), 10)
  return Number.isInteger(pid) && pid > 0 ? pid : undefined
}

/** Creates `path` holding `text`, atomically (never visible empty); EEXIST when it exists. */
async function createExclusive(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`
  await writeFile(tmp, text, { flag: 'wx', mode: 0o600 })
  try {
    await link(tmp, path)
  } catch (e) {
    const code = (e as { code?: unknown }).code
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw e
    // File systems without hard links: a plain exclusive create.
    await writeFile(path, text, { flag: 'wx', mode: 0o600 })
  } finally {
    await rm(tmp, { force: true })
  }
}

/** An exclusive hold on a data directory; see {@link lockDataDir}. */
export interface DataDirLock {
  /** The lock file. */
  readonly path: string
  /** Removes the lock file (only while it still holds this process's pid). Idempotent. */
  release(): Promise<void>
}

/**
 * Takes the exclusive lock of a data directory: creates `<root>/lock` holding this process's pid.
 * A lock left by a process that no longer exists, or is a zombie (killed, not yet reaped), is taken over. The lock is also removed when the
 * process exits (`process.on('exit')`), including a forced exit.
 * @throws {@link CliError} (exit 1) naming the directory and the pid holding it when another live
 *   process (or this one) already holds it.
 */
export async function lockDataDir(layout: DataDirLayout): Promise<DataDirLock> {
  const path = layout.lock
  const text = `${process.pid}\n`
  for (let attempt = 0; ; attempt++) {
    try {
      await createExclusive(path, text)
      break
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'EEXIST') {
        throw new CliError(`cannot lock data directory ${layout.root}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
      }
    }
    const holder = await lockHolder(path)
    if (attempt >= 2 || (holder !== undefined && processAlive(holder))) {
      const who = holder === undefined ? 'another process' : `process ${holder}`
      throw new CliError(`data directory ${layout.root} is in use by ${who} (lock file ${path}); stop that node or pick another --data-dir`)
    }
    // Stale: its process is gone (or the file holds no pid). Remove it and try again.
    await unlink(path).catch(() => undefined)
  }
  let released = false
  const ours = (): boolean => {
    try {
      return readFileSync(path, 'utf8').trim() === String(process.pid)
    } catch {
      return false
    }
  }
  const onExit = (): void => {
    if (released) return
    released = true
    try {
      if (ours()) unlinkSync(path)
    } catch {
      // Best effort at exit.
    }
  }
  process.on('exit', onExit)
  return {
    path,
    release: async () => {
      if (released) return
      released = true
      process.off('exit', onExit)
      if (ours()) await unlink(path).catch(() => undefined)
    },
  }
}

/** A prepared, locked data directory returned by {@link prepareDataDir}. */
export interface PreparedDataDir extends DataDirLayout {
  /** Releases the data directory lock. Idempotent. */
  release(): Promise<void>
}

/**
 * Creates the data directory (mode 0700) if needed, checks it is a private (see
 * {@link checkDataDirSafety}), readable and writable directory, and takes its exclusive lock
 * (see {@link lockDataDir}). Call `release()` when done with it.
 * @throws {@link CliError} with one line naming the path when it cannot be created, is not a
 *   directory, is a symlink, belongs to another user, is not readable and writable, or is in use by
 *   another node (exit code 1).
 */
export async function prepareDataDir(root: string, options: PrepareDataDirOptions = {}): Promise<PreparedDataDir> {
  const layout = dataDirLayout(root)
  try {
    await mkdirs(layout.root, 0o700)
  } catch (e) {
    throw new CliError(`cannot create data directory ${layout.root}: ${errnoText(e)}; pick another with --data-dir`, ExitCode.Error, { cause: e })
  }
  await checkDataDirSafety(layout.root, options.logger)
  try {
    await access(layout.root, constants.R_OK | constants.W_OK | constants.X_OK)
  } catch (e) {
    throw new CliError(`data directory ${layout.root} is not readable and writable: ${errnoText(e)}; fix its permissions or pick another with --data-dir`, ExitCode.Error, { cause: e })
  }
  const lock = await lockDataDir(layout)
  try {
    await mkdir(layout.keys, { recursive: true, mode: 0o700 })
    await mkdir(layout.storage, { recursive: true, mode: 0o700 })
    await access(layout.keys, constants.R_OK | constants.W_OK)
    await access(layout.storage, constants.R_OK | constants.W_OK)
  } catch (e) {
    await lock.release()
    throw new CliError(`data directory ${layout.root} is not usable: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  return { ...layout, release: () => lock.release() }
}

/**
 * Creates `dir` and its missing parents, one component at a time, and rejects with the real
 * errno of the first one that cannot be created. Node's `mkdir({ recursive: true })` is not used:
 * it reports EROFS (a read-only file system) as ENOENT, and on a path under `/proc` it retries
 * forever at full CPU.
 */
export async function mkdirs(dir: string, mode: number): Promise<void> {
  const missing: string[] = []
  let cur = resolve(dir)
  for (;;) {
    try {
      const st = await lstat(cur)
      if (!st.isDirectory() && !st.isSymbolicLink()) throw Object.assign(new Error(`${cur} is not a directory`), { code: 'ENOTDIR' })
      break
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'ENOENT') throw e
    }
    missing.push(cur)
    const parent = dirname(cur)
    if (parent === cur) break
    cur = parent
  }
  for (const d of missing.reverse()) {
    try {
      await mkdir(d, { mode })
    } catch (e) {
      const code = (e as { code?: unknown }).code
      if (code === 'EEXIST') continue
      // The parent exists (it was just checked or created): ENOENT here means the file system
      // refuses directories in it (procfs, sysfs), not that something is missing.
      if (code === 'ENOENT') throw Object.assign(new Error(`${dirname(d)} does not allow creating directories in it`), { code: 'ENOENT', path: d, cause: e, refused: true })
      throw e
    }
  }
}

/** `EACCES (permission denied)`-style text for an fs error. */
export function errnoText(e: unknown): string {
  const code = (e as { code?: unknown }).code
  if ((e as { refused?: unknown }).refused === true && e instanceof Error) return e.message
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied'
  if (code === 'ENOTDIR') return 'a path component is not a directory'
  if (code === 'EROFS') return 'read-only file system'
  if (code === 'ENOSPC') return 'no space left on device'
  if (code === 'ENOENT') return 'no such file or directory'
  return typeof code === 'string' ? code : e instanceof Error ? e.message : String(e)
}
