import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Logger } from '@ron/core'
import { until } from '@ron/core/testing'
import { checkDataDirSafety, dataDirLayout, defaultDataDir, prepareDataDir, processAlive, processState } from '../src/data-dir.js'
import { CliError, ExitCode } from '../src/exit-codes.js'

describe('default data directory', () => {
  it('follows XDG on Linux and falls back to ~/.local/share', () => {
    expect(defaultDataDir({ platform: 'linux', env: { XDG_DATA_HOME: '/x/data' }, home: '/home/a' })).toBe('/x/data/ron')
    expect(defaultDataDir({ platform: 'linux', env: {}, home: '/home/a' })).toBe('/home/a/.local/share/ron')
  })

  it('uses Application Support on macOS and LOCALAPPDATA on Windows', () => {
    expect(defaultDataDir({ platform: 'darwin', env: {}, home: '/Users/a' })).toBe('/Users/a/Library/Application Support/ron')
    expect(defaultDataDir({ platform: 'win32', env: { LOCALAPPDATA: 'C:\\Users\\a\\AppData\\Local' }, home: 'C:\\Users\\a' })).toBe('C:\\Users\\a\\AppData\\Local\\ron')
    expect(defaultDataDir({ platform: 'win32', env: {}, home: 'C:\\Users\\a' })).toBe('C:\\Users\\a\\AppData\\Local\\ron')
  })

  it('ignores a relative XDG_DATA_HOME, as the XDG spec requires', () => {
    expect(defaultDataDir({ platform: 'linux', env: { XDG_DATA_HOME: 'rel/data' }, home: '/home/a' })).toBe('/home/a/.local/share/ron')
  })

  it('lets RON_DATA_DIR override the platform default', () => {
    expect(defaultDataDir({ platform: 'linux', env: { RON_DATA_DIR: '/srv/ron', XDG_DATA_HOME: '/x' }, home: '/h' })).toBe('/srv/ron')
  })
})

describe('prepareDataDir', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-datadir-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('creates the directory tree with mode 0700', async () => {
    const layout = await prepareDataDir(join(dir, 'fresh'))
    await layout.release()
    expect(layout).toMatchObject(dataDirLayout(join(dir, 'fresh')))
    const st = await stat(layout.keys)
    expect(st.isDirectory()).toBe(true)
    if (process.platform !== 'win32') expect((await stat(layout.root)).mode & 0o777).toBe(0o700)
  })

  it('fails with one line naming the path when the data dir cannot be created', async () => {
    const file = join(dir, 'a-file')
    await writeFile(file, 'x')
    const err = await prepareDataDir(join(file, 'sub')).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Error)
    expect((err as CliError).message).toContain(join(file, 'sub'))
    expect((err as CliError).message).not.toContain('\n')
  })

  it('fails when the data dir is a file', async () => {
    const file = join(dir, 'plain-file')
    await writeFile(file, 'x')
    await expect(prepareDataDir(file)).rejects.toThrow(/plain-file/)
  })
})

/** A logger that records warnings. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = []
  const noop = (): void => undefined
  const logger = { warnings, trace: noop, debug: noop, info: noop, error: noop, fatal: noop, warn: (_o: unknown, msg?: string) => warnings.push(msg ?? ''), child: () => logger }
  return logger
}

const posix = process.platform !== 'win32'

/** The command name of `pid` (`/proc` on Linux, `ps` elsewhere); undefined once it is gone. */
function commandOf(pid: number): string | undefined {
  try {
    if (process.platform === 'linux') return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    return execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim().split('/').pop()
  } catch {
    return undefined
  }
}

describe('data directory lock', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-lock-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('refuses a second user of the directory, naming it and the pid that holds it, until released', async () => {
    const root = join(dir, 'busy')
    const first = await prepareDataDir(root)
    expect((await readFile(first.lock, 'utf8')).trim()).toBe(String(process.pid))
    const err = await prepareDataDir(root).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Error)
    expect((err as CliError).message).toContain(root)
    expect((err as CliError).message).toContain(`process ${process.pid}`)
    expect((err as CliError).message).not.toContain('\n')
    await first.release()
    await first.release()
    const second = await prepareDataDir(root)
    await second.release()
    await expect(stat(second.lock)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('takes over a lock left by a process that no longer exists', async () => {
    const root = join(dir, 'stale')
    await mkdir(root, { recursive: true, mode: 0o700 })
    const dead = spawnSync(process.execPath, ['-e', '']).pid
    await writeFile(join(root, 'lock'), `${dead}\n`)
    const layout = await prepareDataDir(root)
    expect((await readFile(layout.lock, 'utf8')).trim()).toBe(String(process.pid))
    await layout.release()
  })

  it.runIf(posix)('takes over a lock held by a zombie (killed, not yet reaped) process', async () => {
    const root = join(dir, 'zombie')
    await mkdir(root, { recursive: true, mode: 0o700 })
    // The shell starts a background child, prints its pid, then becomes `sleep`, which never
    // reaps children: once killed, the background child stays a zombie while its parent lives.
    const parent = spawn('sh', ['-c', 'sleep 1000 & echo $!; exec sleep 1000'], { stdio: ['ignore', 'pipe', 'ignore'] })
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        parent.stdout.setEncoding('utf8').once('data', (s: string) => resolve(Number.parseInt(s.trim(), 10)))
        parent.once('error', reject)
      })
      expect(processAlive(pid)).toBe(true)
      // Until the shell has become `sleep`, it may still reap the child itself (then no zombie).
      await until(() => commandOf(parent.pid!) === 'sleep', 'the shell has exec’d sleep')
      process.kill(pid, 'SIGKILL')
      // Bounded wait until the kernel reports the zombie state (no sleep as synchronisation).
      await until(() => processState(pid) === 'Z', 'the killed child is a zombie')
      expect(() => process.kill(pid, 0)).not.toThrow()
      expect(processAlive(pid)).toBe(false)
      await writeFile(join(root, 'lock'), `${pid}\n`)
      const layout = await prepareDataDir(root)
      expect((await readFile(layout.lock, 'utf8')).trim()).toBe(String(process.pid))
      await layout.release()
    } finally {
      parent.kill('SIGKILL')
      await new Promise((r) => (parent.exitCode !== null || parent.signalCode !== null ? r(undefined) : parent.once('exit', r)))
    }
  })

  it('keeps a lock held by a live process', async () => {
    const root = join(dir, 'live')
    await mkdir(root, { recursive: true, mode: 0o700 })
    await writeFile(join(root, 'lock'), `${process.pid}\n`)
    await expect(prepareDataDir(root)).rejects.toThrow(/in use by process/)
  })
})

describe.runIf(posix)('data directory permissions', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-perms-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('tightens a group/world-accessible directory it owns to 0700, with a warning', async () => {
    const root = join(dir, 'loose')
    await mkdir(root)
    await chmod(root, 0o777)
    const logger = recordingLogger()
    const layout = await prepareDataDir(root, { logger })
    await layout.release()
    expect((await stat(root)).mode & 0o777).toBe(0o700)
    expect(logger.warnings.join(' ')).toMatch(/mode to 700/)
  })

  it('refuses a shared sticky directory (like /tmp itself) instead of locking it down', async () => {
    const shared = join(dir, 'shared')
    await mkdir(shared)
    await chmod(shared, 0o1777)
    const err = await prepareDataDir(shared).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toMatch(/shared \(sticky\) directory/)
    expect((await stat(shared)).mode & 0o7777).toBe(0o1777)
  })

  it('refuses a data directory that is a symbolic link', async () => {
    const real = join(dir, 'real')
    await mkdir(real, { mode: 0o700 })
    const link = join(dir, 'link')
    await symlink(real, link)
    const err = await prepareDataDir(link).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toMatch(/symbolic link/)
    expect((err as CliError).message).toContain(link)
  })

  it('refuses a data directory owned by another user and leaves its mode alone', async () => {
    let other = '/'
    if (process.getuid?.() === 0) {
      other = join(dir, 'someone-elses')
      await mkdir(other)
      await chmod(other, 0o777)
      await chown(other, 4242, 4242)
    }
    const before = (await stat(other)).mode
    const err = await checkDataDirSafety(other).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toMatch(/owned by uid \d+, not by the current user/)
    expect((await stat(other)).mode).toBe(before)
  })
})
