import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dataDirLayout, defaultDataDir, prepareDataDir } from '../src/data-dir.js'
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
    expect(layout).toEqual(dataDirLayout(join(dir, 'fresh')))
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
