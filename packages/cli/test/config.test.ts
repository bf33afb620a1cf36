import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { thrownBy } from '@ron/core/testing'
import { AVAILABLE_SERVICES } from '../src/ports.js'
import { configPrintCommand, configValidateCommand } from '../src/actions/config.js'
import { loadNodeConfig } from '../src/config.js'
import { CliError, ExitCode } from '../src/exit-codes.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-config-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

function capture(): NodeJS.WritableStream & { text: string } {
  const out = {
    text: '',
    write(s: string | Uint8Array) {
      out.text += typeof s === 'string' ? s : Buffer.from(s).toString()
      return true
    },
  }
  return out as unknown as NodeJS.WritableStream & { text: string }
}

describe('node config', () => {
  it('uses documented defaults when nothing is given', () => {
    const cfg = loadNodeConfig({ env: {} })
    expect(cfg).toMatchObject({ host: '127.0.0.1', portBase: 7700, services: [...AVAILABLE_SERVICES], logLevel: 'info', drainDeadline: 3000, peers: [], amnesia: false })
    expect(cfg.dataDir).toBeUndefined()
  })

  it('sets the heap growing factor to 4 unless told otherwise (a number in [1.1, 8] or "auto")', async () => {
    expect(loadNodeConfig({ env: {} }).heapGrowth).toBe(4)
    expect(loadNodeConfig({ env: { RON_HEAP_GROWTH: 'auto' } }).heapGrowth).toBe('auto')
    expect(loadNodeConfig({ env: { RON_HEAP_GROWTH: '2.5' } }).heapGrowth).toBe(2.5)
    const file = join(dir, 'heap.toml')
    await writeFile(file, 'heapGrowth = 3\n')
    expect(loadNodeConfig({ file, env: {} }).heapGrowth).toBe(3)
    for (const bad of ['1', '9', 'fast']) {
      const err = thrownBy(() => loadNodeConfig({ env: { RON_HEAP_GROWTH: bad } }))
      expect(err, bad).toBeInstanceOf(CliError)
      expect((err as CliError).message).toContain('heapGrowth')
    }
  })

  it('keeps the young generation at its initial size unless told otherwise (an integer in [1, 8] or "auto")', async () => {
    expect(loadNodeConfig({ env: {} }).youngGenGrowth).toBe(1)
    expect(loadNodeConfig({ env: { RON_YOUNG_GEN_GROWTH: 'auto' } }).youngGenGrowth).toBe('auto')
    expect(loadNodeConfig({ env: { RON_YOUNG_GEN_GROWTH: '2' } }).youngGenGrowth).toBe(2)
    const file = join(dir, 'young.toml')
    await writeFile(file, 'youngGenGrowth = 4\n')
    expect(loadNodeConfig({ file, env: {} }).youngGenGrowth).toBe(4)
    for (const bad of ['0', '1.5', '9', 'fast']) {
      const err = thrownBy(() => loadNodeConfig({ env: { RON_YOUNG_GEN_GROWTH: bad } }))
      expect(err, bad).toBeInstanceOf(CliError)
      expect((err as CliError).message).toContain('youngGenGrowth')
    }
  })

  it('layers file < RON_* env < flags', async () => {
    const file = join(dir, 'layers.toml')
    await writeFile(file, 'portBase = 9000\nhost = "0.0.0.0"\nlogLevel = "warn"\n[storage]\nmaxObjectBytes = "1MiB"\n')
    const cfg = loadNodeConfig({ file, env: { RON_PORT_BASE: '9100', RON_LOG_LEVEL: 'debug', RON_STORAGE__WRITERS: '3', RON_PEERS: 'http://10.0.0.2:7700,http://10.0.0.3:7700', RON_STORAGE__REPAIR__INTERVAL: '2s' }, flags: { portBase: '9200', storage: { rf: '3' } } })
    expect(cfg.portBase).toBe(9200)
    expect(cfg.host).toBe('0.0.0.0')
    expect(cfg.logLevel).toBe('debug')
    expect(cfg.storage).toEqual({ maxObjectBytes: 1024 * 1024, writers: 3, rf: 3, repair: { interval: 2000 } })
    expect(cfg.peers).toEqual(['http://10.0.0.2:7700', 'http://10.0.0.3:7700'])
  })

  it('accepts JSON files, durations and comma-separated service lists', async () => {
    const file = join(dir, 'ok.json')
    await writeFile(file, JSON.stringify({ drainDeadline: '1500ms', services: 'storage' }))
    const cfg = loadNodeConfig({ file, env: { RON_ADMIN_TOKEN_TTL: '2d' } })
    expect(cfg.drainDeadline).toBe(1500)
    expect(cfg.services).toEqual(['storage'])
    expect(cfg.adminTokenTtl).toBe(2 * 86_400_000)
  })

  it('rejects an unknown key in a file with a usage error naming the key', async () => {
    const file = join(dir, 'typo.json')
    await writeFile(file, JSON.stringify({ storage: { maxObjectByte: 5 } }))
    const err = thrownBy(() => loadNodeConfig({ file, env: {} }))
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Usage)
    expect((err as CliError).message).toContain('storage.maxObjectByte')
  })

  it('rejects a bad value from the environment naming the key', () => {
    expect(() => loadNodeConfig({ env: { RON_PORT_BASE: 'lots' } })).toThrow(/portBase/)
    expect(() => loadNodeConfig({ env: { RON_DRAIN_DEADLINE: 'soon' } })).toThrow(/drainDeadline/)
  })

  it('rejects an empty port base instead of reading it as 0 (random ports)', () => {
    const err = thrownBy(() => loadNodeConfig({ env: {}, flags: { portBase: '' } }))
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Usage)
    expect((err as CliError).message).toMatch(/portBase/)
    expect(() => loadNodeConfig({ env: {}, flags: { portBase: '  ' } })).toThrow(/portBase/)
    expect(loadNodeConfig({ env: {}, flags: { portBase: '0' } }).portBase).toBe(0)
    expect(() => loadNodeConfig({ env: {}, flags: { portBase: '65531' } })).toThrow(/portBase/)
  })

  it('config validate rejects services this build cannot host, as start would', async () => {
    const file = join(dir, 'bogus.json')
    await writeFile(file, JSON.stringify({ services: ['bogus'] }))
    const out = capture()
    const err = thrownBy(() => configValidateCommand({ config: file, flags: {}, env: {} }, out))
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Usage)
    expect((err as CliError).message).toMatch(/services\.0/)
    expect(out.text).toBe('')
    expect(() => loadNodeConfig({ env: { RON_SERVICES: 'storage,nope' } })).toThrow(/services\.1/)
  })

  it('reports an unreadable config file as a usage error naming the file', () => {
    expect(() => loadNodeConfig({ file: join(dir, 'missing.toml'), env: {} })).toThrow(/missing\.toml/)
  })

  it('config print shows the effective config; the retired peerToken is an unknown key', async () => {
    const old = join(dir, 'old.json')
    await writeFile(old, JSON.stringify({ storage: { peerToken: 'super-secret-token' } }))
    expect(() => loadNodeConfig({ file: old, env: {} })).toThrow(/peerToken/)
    const file = join(dir, 'cluster.json')
    await writeFile(file, JSON.stringify({ peers: ['http://10.0.0.2:7700'], advertise: '10.0.0.1', storage: { rf: 2, writeQuorum: 2 }, portBase: 7800 }))
    const out = capture()
    configPrintCommand({ config: file, flags: {}, env: { RON_DATA_DIR: join(dir, 'data') } }, out)
    const printed = JSON.parse(out.text) as { storage: { rf: number; writeQuorum: number }; portBase: number; dataDir: string; peers: string[]; advertise: string }
    expect(printed).toMatchObject({ peers: ['http://10.0.0.2:7700'], advertise: '10.0.0.1', storage: { rf: 2, writeQuorum: 2 } })
    expect(printed.portBase).toBe(7800)
    expect(printed.dataDir).toBe(join(dir, 'data'))
  })
})
