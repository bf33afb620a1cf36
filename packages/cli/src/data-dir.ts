/**
 * Where a node keeps its state, following each platform's conventions, and the checks run before
 * a node uses it.
 *
 * @module
 */

import { constants } from 'node:fs'
import { access, mkdir, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join, resolve, win32 } from 'node:path'
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
 * - Linux and other Unix: `$XDG_DATA_HOME/ron`, else `~/.local/share/ron`;
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
  return xdg !== undefined && xdg !== '' ? join(xdg, 'ron') : join(home, '.local', 'share', 'ron')
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
  }
}

/**
 * Creates the data directory (mode 0700) if needed and checks it is a readable and writable
 * directory.
 * @throws {@link CliError} with one line naming the path when it cannot be created, is not a
 *   directory, or is not readable and writable (exit code 1).
 */
export async function prepareDataDir(root: string): Promise<DataDirLayout> {
  const layout = dataDirLayout(root)
  try {
    await mkdir(layout.root, { recursive: true, mode: 0o700 })
  } catch (e) {
    throw new CliError(`cannot create data directory ${layout.root}: ${errnoText(e)}; pick another with --data-dir`, ExitCode.Error, { cause: e })
  }
  const st = await stat(layout.root)
  if (!st.isDirectory()) throw new CliError(`data directory ${layout.root} is not a directory; pick another with --data-dir`)
  try {
    await access(layout.root, constants.R_OK | constants.W_OK | constants.X_OK)
  } catch (e) {
    throw new CliError(`data directory ${layout.root} is not readable and writable: ${errnoText(e)}; fix its permissions or pick another with --data-dir`, ExitCode.Error, { cause: e })
  }
  try {
    await mkdir(layout.keys, { recursive: true, mode: 0o700 })
    await mkdir(layout.storage, { recursive: true, mode: 0o700 })
    await access(layout.keys, constants.R_OK | constants.W_OK)
    await access(layout.storage, constants.R_OK | constants.W_OK)
  } catch (e) {
    throw new CliError(`data directory ${layout.root} is not usable: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  return layout
}

/** `EACCES (permission denied)`-style text for an fs error. */
export function errnoText(e: unknown): string {
  const code = (e as { code?: unknown }).code
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied'
  if (code === 'ENOTDIR') return 'a path component is not a directory'
  if (code === 'EROFS') return 'read-only file system'
  if (code === 'ENOSPC') return 'no space left on device'
  if (code === 'ENOENT') return 'no such file or directory'
  return typeof code === 'string' ? code : e instanceof Error ? e.message : String(e)
}
