import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile as writeFileP } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getCommand } from '../src/actions/get.js'
import { putCommand } from '../src/actions/put.js'
import { CliError, ExitCode, exitCodeFor } from '../src/exit-codes.js'
import { startNode, type RonNode } from '../src/node.js'

function sink(): NodeJS.WritableStream & { text: string; bytes: Buffer[] } {
  const out = {
    text: '',
    bytes: [] as Buffer[],
    write(s: string | Uint8Array) {
      const b = typeof s === 'string' ? Buffer.from(s) : Buffer.from(s)
      out.bytes.push(b)
      out.text += b.toString()
      return true
    },
    once() {
      return out
    },
  }
  return out as unknown as NodeJS.WritableStream & { text: string; bytes: Buffer[] }
}

describe('startNode (in-process)', () => {
  let dir: string
  let node: RonNode

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-node-'))
    node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500 })
  })
  afterAll(async () => {
    await node?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('reports every listener and the token file, and becomes ready', async () => {
    expect(Object.keys(node.services)).toEqual(['storage', 'registry', 'passport', 'index', 'interop'])
    expect(node.summary()).toEqual({
      nodeId: node.nodeId,
      admin: node.admin,
      services: node.services,
      tokenFile: join(dir, 'data', 'admin.token'),
      dataDir: join(dir, 'data'),
    })
    expect(node.firstStart).toBe(true)
    const ready = await fetch(`${node.admin}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ ready: true })
    expect(node.ready()).toBe(true)
  })

  it('serves /status with version, readiness, queue depths and uptime per service', async () => {
    const res = await fetch(`${node.admin}/status`)
    expect(res.status).toBe(200)
    const status = (await res.json()) as { ready: boolean; uptimeSec: number; services: Record<string, { version: string; ready: boolean; queues: { name: string; depth: number; capacity: number }[] }> }
    expect(status.ready).toBe(true)
    expect(status.uptimeSec).toBeGreaterThanOrEqual(0)
    const storage = status.services['storage']!
    expect(storage.version).toMatch(/^\d+\.\d+\.\d+/)
    expect(storage.ready).toBe(true)
    const work = storage.queues.find((q) => q.name === 'work')
    expect(work).toMatchObject({ capacity: 512, depth: 0 })
  })

  it('round-trips bytes through put and get with the admin token, and exposes merged metrics', async () => {
    const file = join(dir, 'in.bin')
    const data = Buffer.alloc(300_000, 7)
    const { writeFile } = await import('node:fs/promises')
    await writeFile(file, data)
    const out = sink()
    const put = await putCommand({ file, node: node.services['storage'], dataDir: join(dir, 'data'), json: true, env: {} }, out)
    expect(JSON.parse(out.text)).toEqual({ address: put.address, size: data.length })
    const target = join(dir, 'out.bin')
    const got = await getCommand({ address: put.address, output: target, node: node.services['storage'], env: {} })
    expect(got.size).toBe(data.length)
    expect(Buffer.compare(await readFile(target), data)).toBe(0)
    const metrics = await (await fetch(`${node.admin}/metrics`)).text()
    expect(metrics).toMatch(/http_requests_total\{[^}]*service="storage"/)
  })

  it('maps a missing object to exit code 3 and a bad token to exit code 4', async () => {
    const missing = `b3:${'0'.repeat(64)}`
    const e1 = await getCommand({ address: missing, node: node.services['storage'], env: {} }, sink()).catch((e: unknown) => e)
    expect(exitCodeFor(e1)).toBe(ExitCode.NotFound)
    const file = join(dir, 'in.bin')
    const e2 = await putCommand({ file, node: node.services['storage'], token: 'not.a.token', env: {} }, sink()).catch((e: unknown) => e)
    expect(exitCodeFor(e2)).toBe(ExitCode.Auth)
    // A well-formed token without storage:write is refused before a byte is sent.
    const { generateIssuerKey, signToken } = await import('@ron/core')
    const readOnly = signToken(generateIssuerKey(), { sub: 't', aud: ['storage'], scope: 'storage:read', ttlSec: 60 })
    const e3 = await putCommand({ file, node: node.services['storage'], token: readOnly, env: {} }, sink()).catch((e: unknown) => e)
    expect(exitCodeFor(e3)).toBe(ExitCode.Auth)
    expect((e3 as Error).message).toContain('storage:write')
  })

  it('refuses a second node on the same data directory, naming it and the pid, without disturbing the first', async () => {
    const tmpDir = join(dir, 'data', 'storage', 'tmp')
    await writeFileP(join(tmpDir, 'in-progress.upload'), 'partial')
    const err = await startNode({ dataDir: join(dir, 'data'), portBase: 0 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).exitCode).toBe(ExitCode.Error)
    expect((err as CliError).message).toBe(
      `data directory ${join(dir, 'data')} is in use by process ${process.pid} (lock file ${join(dir, 'data', 'lock')}); stop that node or pick another --data-dir`,
    )
    expect(await readdir(tmpDir)).toContain('in-progress.upload')
    expect((await readFile(join(dir, 'data', 'lock'), 'utf8')).trim()).toBe(String(process.pid))
    expect((await fetch(`${node.admin}/readyz`)).status).toBe(200)
    await rm(join(tmpDir, 'in-progress.upload'))
  })

  it('maps an unreachable node to exit code 6', async () => {
    const e = await getCommand({ address: `b3:${'1'.repeat(64)}`, node: 'http://127.0.0.1:1', env: {} }, sink()).catch((x: unknown) => x)
    expect(exitCodeFor(e)).toBe(ExitCode.Unavailable)
  })
})

describe('get against a node that serves wrong bytes', () => {
  let dir: string
  let server: import('node:http').Server
  let url: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-liar-'))
    const { createServer: createHttpServer } = await import('node:http')
    server = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '5' })
      res.end('lies!')
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
    await rm(dir, { recursive: true, force: true })
  })

  it('exits 5, leaves the target untouched and removes its temporary file', async () => {
    const { writeFile, readdir } = await import('node:fs/promises')
    const target = join(dir, 'keep.txt')
    await writeFile(target, 'original')
    const err = await getCommand({ address: `b3:${'2'.repeat(64)}`, output: target, node: url, env: {} }).catch((e: unknown) => e)
    expect(exitCodeFor(err)).toBe(ExitCode.Integrity)
    expect(await readFile(target, 'utf8')).toBe('original')
    expect(await readdir(dir)).toEqual(['keep.txt'])
  })
})

describe('startNode failures', () => {
  let dir: string
  let blocker: Server
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-node-fail-'))
    blocker = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
  })
  afterAll(async () => {
    await new Promise<void>((r) => blocker.close(() => r()))
    await rm(dir, { recursive: true, force: true })
  })

  it('names the port and the service when a port is in use, and leaves nothing listening', async () => {
    const port = (blocker.address() as { port: number }).port
    const err = await startNode({ dataDir: join(dir, 'd'), portBase: port - 1 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toBe(`port ${port} is in use (storage); pick another with --port-base`)
  })

  it('fails on a port conflict before storage recovery touches the data, and releases the lock', async () => {
    const port = (blocker.address() as { port: number }).port
    const dataDir = join(dir, 'keep')
    await mkdir(join(dataDir, 'storage', 'tmp'), { recursive: true, mode: 0o700 })
    await writeFileP(join(dataDir, 'storage', 'tmp', 'in-progress.upload'), 'partial')
    // The admin port (base) is taken this time: every listener is bound before any service exists.
    // Which refusal is reported is the first bind to fail: base + 1..5 may belong to another
    // process of a parallel run (CI once saw interop's), so any listener of the node may be named.
    const err = await startNode({ dataDir, portBase: port }).catch((e: unknown) => e)
    expect((err as CliError).message).toMatch(/^port \d+ is in use \((admin|storage|registry|passport|index|interop)\); pick another with --port-base$/)
    expect(await readdir(join(dataDir, 'storage', 'tmp'))).toEqual(['in-progress.upload'])
    await expect(stat(join(dataDir, 'lock'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('refuses services this build does not have, as a usage error', async () => {
    const err = await startNode({ dataDir: join(dir, 'e'), portBase: 0, services: ['bogus' as never] }).catch((e: unknown) => e)
    expect((err as CliError).exitCode).toBe(ExitCode.Usage)
  })
})
