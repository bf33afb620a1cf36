/**
 * TLS listeners over real sockets: a self-signed certificate made by `openssl` for 127.0.0.1,
 * trusted through an undici Agent's `connect.ca`.
 */

import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeConfigSchema } from '../src/config.js'
import { listen, loadTls, type Listener } from '../src/listener.js'
import { assertBuilt, firstJsonLine, runCli, spawnCli } from './helpers.js'

let dir: string
let cert: string
let key: string
let agent: Agent
const listeners: Listener[] = []

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ron-tls-'))
  cert = join(dir, 'cert.pem')
  key = join(dir, 'key.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' })
  agent = new Agent({ connect: { ca: readFileSync(cert) } })
})

afterAll(async () => {
  await Promise.all(listeners.map((l) => l.close()))
  await agent.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('TLS listeners', () => {
  it('serves HTTPS with the same handler and reports an https:// URL', async () => {
    const tls = await loadTls({ cert, key })
    const l = await listen((req, res) => res.end(`hello ${req.url} ${(req.socket as { encrypted?: boolean }).encrypted === true}`), { port: 0, host: '127.0.0.1', what: 'admin', drainDeadlineMs: 500, tls })
    listeners.push(l)
    expect(l.url).toBe(`https://127.0.0.1:${l.port}`)
    const res = await request(`${l.url}/readyz`, { dispatcher: agent })
    expect(res.statusCode).toBe(200)
    expect(await res.body.text()).toBe('hello /readyz true')
    // attach() swaps the handler on the TLS listener too.
    l.attach((_req, res2) => res2.end('attached'))
    const again = await request(`${l.url}/x`, { dispatcher: agent })
    expect(await again.body.text()).toBe('attached')
  })

  it('is refused by a client that does not trust the certificate', async () => {
    const tls = await loadTls({ cert, key })
    const l = await listen((_req, res) => res.end('x'), { port: 0, host: '127.0.0.1', what: 'storage', drainDeadlineMs: 500, tls })
    listeners.push(l)
    const untrusting = new Agent()
    await expect(request(`${l.url}/`, { dispatcher: untrusting })).rejects.toMatchObject({ code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY|DEPTH_ZERO/) })
    await untrusting.close()
  })

  it('a Node client trusts the certificate through NODE_EXTRA_CA_CERTS (how the CLI client commands are pointed at a private CA)', async () => {
    const tls = await loadTls({ cert, key })
    const l = await listen((_req, res) => res.end('trusted'), { port: 0, host: '127.0.0.1', what: 'registry', drainDeadlineMs: 500, tls })
    listeners.push(l)
    const script = `fetch(${JSON.stringify(`${l.url}/readyz`)}).then(async (r) => process.stdout.write(await r.text()), (e) => { process.stdout.write(String(e.cause?.code ?? e)); process.exitCode = 1 })`
    const run = (env: Record<string, string>): Promise<string> =>
      new Promise((resolve) => {
        execFile(process.execPath, ['-e', script], { env: { PATH: process.env['PATH'] ?? '', ...env } }, (_err, stdout) => resolve(stdout))
      })
    expect(await run({ NODE_EXTRA_CA_CERTS: cert })).toBe('trusted')
    expect(await run({})).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|DEPTH_ZERO/)
  })

  it('close() drains a TLS listener: an in-flight request finishes, then the port is released', async () => {
    const tls = await loadTls({ cert, key })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let arrived!: () => void
    const inFlight = new Promise<void>((r) => (arrived = r))
    const l = await listen(
      (_req, res) => {
        arrived()
        void gate.then(() => res.end('done'))
      },
      { port: 0, host: '127.0.0.1', what: 'index', drainDeadlineMs: 5000, tls },
    )
    const pending = request(`${l.url}/slow`, { dispatcher: agent })
    await inFlight
    const closed = l.close()
    release()
    const res = await pending
    expect(await res.body.text()).toBe('done')
    await closed
    await expect(request(`${l.url}/`, { dispatcher: agent })).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })

  it('names the unreadable file, and refuses a key that is not PEM', async () => {
    await expect(loadTls({ cert: join(dir, 'missing.pem'), key })).rejects.toThrow(`cannot read the TLS certificate ${join(dir, 'missing.pem')}: no such file; check tls.cert (--tls-cert)`)
    await expect(loadTls({ cert, key: dir })).rejects.toThrow(/cannot read the TLS key .*: is a directory; check tls.key/)
    const junk = join(dir, 'junk.pem')
    writeFileSync(junk, 'not a key')
    await expect(loadTls({ cert, key: junk })).rejects.toThrow(/unusable TLS certificate\/key/)
    await expect(loadTls({ cert, key: junk })).rejects.toMatchObject({ exitCode: 2 })
  })
})

describe('tls config', () => {
  it('takes cert and key together, from a file section or RON_TLS__CERT / RON_TLS__KEY', () => {
    expect(nodeConfigSchema.parse({ tls: { cert: '/c.pem', key: '/k.pem' } }).tls).toEqual({ cert: '/c.pem', key: '/k.pem' })
    expect(nodeConfigSchema.parse({}).tls).toBeUndefined()
    const r = nodeConfigSchema.safeParse({ tls: { cert: '/c.pem' } })
    expect(r.success).toBe(false)
    expect(JSON.stringify(r.error?.issues)).toContain('key')
  })
})

describe('ron-node start over TLS (real binary)', () => {
  it('--tls-cert/--tls-key: every listener reports and serves https://, and put/get work with the CA trusted', async () => {
    assertBuilt()
    const dataDir = join(dir, 'node')
    const proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', dataDir, '--log-level', 'warn', '--tls-cert', cert, '--tls-key', key])
    try {
      const summary = await firstJsonLine<{ admin: string; services: Record<string, string> }>(proc, 60_000)
      expect(summary.admin).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
      for (const url of Object.values(summary.services)) expect(url).toMatch(/^https:\/\//)
      const ready = await request(`${summary.admin}/readyz`, { dispatcher: agent })
      expect(ready.statusCode).toBe(200)
      await ready.body.dump()
      const file = join(dir, 'hello.txt')
      writeFileSync(file, 'hello over tls')
      const trusted = { NODE_EXTRA_CA_CERTS: cert }
      const put = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir], trusted)
      expect(put.stderr).toBe('')
      expect(put.code).toBe(0)
      const address = put.stdout.trim()
      expect(address).toMatch(/^b3:[0-9a-f]{64}$/)
      const get = await runCli(['get', address, '-o', join(dir, 'hello.copy.txt'), '--node', summary.admin, '--data-dir', dataDir], trusted)
      expect(get.code).toBe(0)
      expect(readFileSync(join(dir, 'hello.copy.txt'), 'utf8')).toBe('hello over tls')
    } finally {
      proc.child.kill('SIGTERM')
      await proc.exited
    }
  })
})

describe('a node over TLS applies each service listener policy', () => {
  it('the per-IP connection cap (http.maxConcurrentPerIp) holds on a TLS service listener: the socket over it gets 429 per_ip', async () => {
    const { startNode } = await import('../src/node.js')
    const { connect } = await import('node:tls')
    const node = await startNode({ amnesia: true, portBase: 0, services: ['passport'], tls: { cert, key }, http: { maxConcurrentPerIp: 2 }, drainDeadlineMs: 200 })
    const sockets: import('node:tls').TLSSocket[] = []
    try {
      const url = new URL(node.services['passport']!)
      const open = (): Promise<import('node:tls').TLSSocket> =>
        new Promise((resolve, reject) => {
          const s = connect({ host: url.hostname, port: Number(url.port), ca: readFileSync(cert), ALPNProtocols: ['http/1.1'] }, () => resolve(s))
          s.once('error', reject)
          sockets.push(s)
        })
      const ask = (s: import('node:tls').TLSSocket): Promise<string> =>
        new Promise((resolve) => {
          let text = ''
          s.setEncoding('utf8')
          s.on('data', (d: string) => {
            text += d
            if (/\r\n\r\n[\s\S]*\}/.test(text)) resolve(text)
          })
          s.once('end', () => resolve(text))
          s.write(`GET /v1/passport/keys HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`)
        })
      // Two sockets from this address are within the cap and served; the third is over it.
      const first = await open()
      const second = await open()
      expect(await ask(first)).toMatch(/^HTTP\/1\.1 200/)
      expect(await ask(second)).toMatch(/^HTTP\/1\.1 200/)
      const third = await ask(await open())
      expect(third).toMatch(/^HTTP\/1\.1 429/)
      expect(third).toContain('"reason":"per_ip"')
    } finally {
      for (const s of sockets) s.destroy()
      await node.close()
    }
  })
})
