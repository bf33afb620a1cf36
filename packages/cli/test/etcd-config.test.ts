/** `coordination.etcd`, `--etcd` and `RON_ETCD` (SPEC §6c): how the node config names etcd. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { etcdSettings, loadNodeConfig, printableConfig } from '../src/config.js'
import { normalizePrefix } from '../src/coordination/etcd.js'
import { startNode } from '../src/node.js'
import { CliError, ExitCode } from '../src/exit-codes.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-etcd-config-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('etcd in the node config', () => {
  it('has no coordination without endpoints: everything stays on the node', () => {
    expect(etcdSettings(loadNodeConfig({ env: {} }))).toBeUndefined()
  })

  it('reads the endpoints from RON_ETCD and --etcd (over the file), the rest from coordination.etcd', async () => {
    const file = join(dir, 'etcd.toml')
    await writeFile(
      file,
      [
        '[coordination.etcd]',
        'endpoints = ["http://10.0.0.1:2379"]',
        'prefix = "/ron-a/"',
        'leaseTtl = "3s"',
        'timeout = "500ms"',
        'auth = { username = "ron", password = "hunter2" }',
        'tls = { ca = "/etc/ron/ca.pem" }',
      ].join('\n'),
    )
    expect(etcdSettings(loadNodeConfig({ file, env: {} }))).toEqual({
      endpoints: ['http://10.0.0.1:2379'],
      prefix: '/ron-a/',
      leaseTtlSec: 3,
      timeoutMs: 500,
      auth: { username: 'ron', password: 'hunter2' },
      tls: { ca: '/etc/ron/ca.pem' },
    })
    expect(etcdSettings(loadNodeConfig({ file, env: { RON_ETCD: 'http://e1:2379,http://e2:2379' } }))?.endpoints).toEqual(['http://e1:2379', 'http://e2:2379'])
    expect(etcdSettings(loadNodeConfig({ file, env: { RON_ETCD: 'http://e1:2379' }, flags: { etcd: 'http://f:2379' } }))?.endpoints).toEqual(['http://f:2379'])
    // config print never shows the password.
    expect(JSON.stringify(printableConfig(loadNodeConfig({ file, env: {} })))).not.toContain('hunter2')
  })

  it('refuses a coordination.etcd without endpoints, a bad URL or prefix, naming the key', async () => {
    const file = join(dir, 'bad.json')
    await writeFile(file, JSON.stringify({ coordination: { etcd: { prefix: '/ron/' } } }))
    expect(() => etcdSettings(loadNodeConfig({ file, env: {} }))).toThrow(/coordination\.etcd\.endpoints/)
    expect(() => loadNodeConfig({ env: { RON_ETCD: 'etcd-1:2379' } })).toThrow(CliError)
    await writeFile(file, JSON.stringify({ coordination: { etcd: { endpoints: ['http://e:2379'], prefix: '/ron prod/' } } }))
    expect(() => loadNodeConfig({ file, env: {} })).toThrow(/prefix/)
  })

  it('normalises the prefix to /…/', () => {
    expect(normalizePrefix('ron')).toBe('/ron/')
    expect(normalizePrefix('/ron/a')).toBe('/ron/a/')
  })

  it('refuses etcd together with passport.url or registry.url (every node runs its own on the shared state)', async () => {
    const err = await startNode({ amnesia: true, portBase: 0, registryUrl: 'http://127.0.0.1:1', etcd: { endpoints: ['http://127.0.0.1:1'] } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Usage)
    expect((err as Error).message).toMatch(/drop passport\.url and registry\.url/)
  })
})
