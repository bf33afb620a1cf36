/**
 * The client commands through `runCli` in this process, against a node started in-process
 * (`startNode`, free ports, a temporary data directory): the same commands `cli.e2e` runs through
 * the spawned binary, here where coverage sees the command modules. Each checks what the command
 * did on the node (a second command reads it back) and its exit code on failure.
 */

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runCli } from '../src/cli.js'
import { ExitCode } from '../src/exit-codes.js'
import { startNode, type RonNode } from '../src/node.js'

function sink(): NodeJS.WritableStream & { text: string } {
  const s = {
    text: '',
    write(chunk: string | Uint8Array, ...rest: unknown[]) {
      s.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()
      const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined
      cb?.()
      return true
    },
    once() {
      return s
    },
    on() {
      return s
    },
    end() {
      return s
    },
  }
  return s as unknown as NodeJS.WritableStream & { text: string }
}

let dir: string
let dataDir: string
let node: RonNode
let token: string

/** Runs `ron-node <args> --node <admin> --token <admin token>` in-process. */
async function cli(args: string[], opts: { auth?: boolean } = {}): Promise<{ code: number; out: string; err: string }> {
  const stdout = sink()
  const stderr = sink()
  const auth = opts.auth === false ? [] : ['--node', node.admin, '--token', token, '--data-dir', dataDir]
  // The connection flags go before a "--": what follows it is positional.
  const end = args.indexOf('--')
  const code = await runCli(end < 0 ? [...args, ...auth] : [...args.slice(0, end), ...auth, ...args.slice(end)], { stdout, stderr })
  return { code, out: stdout.text, err: stderr.text }
}

function json<T>(s: string): T {
  return JSON.parse(s.trim().split('\n').at(-1)!) as T
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-inproc-'))
  dataDir = join(dir, 'data')
  node = await startNode({ dataDir, portBase: 0, drainDeadlineMs: 300 })
  await node.whenReady(AbortSignal.timeout(20_000))
  token = (await readFile(node.tokenFile!, 'utf8')).trim()
}, 60_000)
afterAll(async () => {
  await node?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

describe('client commands in-process', () => {
  it('prints its version and help, and refuses an unknown command or option with exit 2', async () => {
    // yargs prints --version and --help with console.log, not through io.
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined)
    try {
      expect((await cli(['--version'], { auth: false })).code).toBe(0)
      expect(String(log.mock.calls.at(-1)?.[0])).toMatch(/^\d+\.\d+\.\d+/)
      expect((await cli(['put', '--help'], { auth: false })).code).toBe(0)
      expect(String(log.mock.calls.at(-1)?.[0])).toMatch(/store a file/)
    } finally {
      log.mockRestore()
    }
    const bad = await cli(['frobnicate'], { auth: false })
    expect(bad.code).toBe(ExitCode.Usage)
    expect(bad.err).toMatch(/^ron-node: /)
    const badOpt = await cli(['status', '--no-such-flag'])
    expect(badOpt.code).toBe(ExitCode.Usage)
  })

  it('puts, gets, stats, lists, pins and unpins an object', async () => {
    const file = join(dir, 'in.txt')
    await writeFile(file, 'hello, ron\n')
    const put = await cli(['put', file, '--json'])
    expect(put.code, put.err).toBe(0)
    const { address, size } = json<{ address: string; size: number }>(put.out)
    expect(address).toMatch(/^b3:[0-9a-f]{64}$/)
    expect(size).toBe(11)
    const target = join(dir, 'out.txt')
    const got = await cli(['get', address, '-o', target])
    expect(got.code, got.err).toBe(0)
    expect(await readFile(target, 'utf8')).toBe('hello, ron\n')
    // A wrong --expect is an integrity failure and stores nothing new.
    const wrong = await cli(['put', file, '--expect', `b3:${'0'.repeat(64)}`])
    expect(wrong.code).toBe(ExitCode.Integrity)

    const stat = await cli(['stat', address, '--json'])
    expect(stat.code, stat.err).toBe(0)
    expect(json<{ size: number }>(stat.out).size).toBe(11)
    const ls = await cli(['ls', '--json'])
    expect(ls.code, ls.err).toBe(0)
    expect(ls.out).toContain(address)
    expect((await cli(['pin', address])).code).toBe(0)
    expect(json<{ pins?: unknown[]; pinned?: boolean }>((await cli(['stat', address, '--json'])).out)).toSatisfy((s: { pins?: unknown[]; pinned?: boolean }) => s.pinned === true || (s.pins?.length ?? 0) > 0)
    expect((await cli(['unpin', address])).code).toBe(0)
    const missing = await cli(['stat', `b3:${'1'.repeat(64)}`])
    expect(missing.code).toBe(ExitCode.NotFound)
    // Without a token the node refuses a write: exit 4.
    const anon = await runCli(['put', file, '--node', node.admin, '--token', 'not-a-token'], { stdout: sink(), stderr: sink() })
    expect(anon).toBe(ExitCode.Auth)
  })

  it('binds, lists, reads, resolves and removes a name', async () => {
    const file = join(dir, 'page.html')
    await writeFile(file, '<h1>docs</h1>')
    const { address } = json<{ address: string }>((await cli(['put', file, '--json'])).out)
    const set = await cli(['name', 'set', 'docs.inproc', address, '--type', 'text/html', '--expect-previous', 'none', '--json'])
    expect(set.code, set.err).toBe(0)
    const again = await cli(['name', 'set', 'docs.inproc', address, '--expect-previous', 'none'])
    expect(again.code).not.toBe(0)
    const ls = await cli(['name', 'ls', '--prefix', 'docs.', '--json'])
    expect(ls.code, ls.err).toBe(0)
    expect(ls.out).toContain('docs.inproc')
    const get = await cli(['name', 'get', 'docs.inproc', '--json'])
    expect(get.code, get.err).toBe(0)
    expect(get.out).toContain(address)
    const resolved = await cli(['resolve', 'docs.inproc', '--json'])
    expect(resolved.code, resolved.err).toBe(0)
    expect(resolved.out).toContain(address)
    const rm = await cli(['name', 'rm', 'docs.inproc'])
    expect(rm.code, rm.err).toBe(0)
    expect((await cli(['name', 'get', 'docs.inproc'])).code).toBe(ExitCode.NotFound)
  })

  it('publishes a directory and binds its name', async () => {
    const site = join(dir, 'site')
    await mkdir(join(site, 'css'), { recursive: true })
    await writeFile(join(site, 'index.html'), '<link href="css/a.css"><h1>site</h1>')
    await writeFile(join(site, 'css', 'a.css'), 'h1{color:red}')
    await writeFile(join(site, '.secret'), 'not published')
    const pub = await cli(['publish', site, '--name', 'site.inproc', '--json'])
    expect(pub.code, pub.err).toBe(0)
    const r = json<{ manifest?: string; manifestAddress?: string; url?: string; files?: number }>(pub.out)
    expect(JSON.stringify(r)).toMatch(/b3:[0-9a-f]{64}/)
    const get = await cli(['name', 'get', 'site.inproc', '--json'])
    expect(get.code, get.err).toBe(0)
    const bound = json<{ kind: string; manifestAddress: string }>(get.out)
    expect(bound.kind).toBe('dir')
    expect(JSON.stringify(r)).toContain(bound.manifestAddress)
    // The manifest lists the files, without the hidden one.
    const manifest = join(dir, 'manifest.json')
    expect((await cli(['get', bound.manifestAddress, '-o', manifest])).code).toBe(0)
    const text = await readFile(manifest, 'utf8')
    expect(text).toContain('index.html')
    expect(text).toContain('css/a.css')
    expect(text).not.toContain('.secret')
    // Published again unchanged: the same manifest, nothing new to upload.
    const again = await cli(['publish', site, '--name', 'site.inproc', '--json'])
    expect(again.code, again.err).toBe(0)
    expect(JSON.stringify(json(again.out))).toContain(JSON.stringify(r).match(/b3:[0-9a-f]{64}/)![0])
  })

  it('issues, verifies, attenuates and revokes tokens', async () => {
    const issued = await cli(['token', 'issue', '--sub', 'bob', '--aud', 'storage', '--scope', 'storage:read,storage:write', '--ttl', '10m', '--json'])
    expect(issued.code, issued.err).toBe(0)
    const bob = json<{ token: string; jti: string }>(issued.out)
    const ok = await cli(['token', 'verify', bob.token, '--json'])
    expect(ok.code, ok.err).toBe(0)
    expect(json<{ valid?: boolean }>(ok.out).valid).toBe(true)
    const child = await cli(['token', 'attenuate', bob.token, '--scope', 'storage:read', '--ttl', '5m', '--json'])
    expect(child.code, child.err).toBe(0)
    const narrow = json<{ token: string }>(child.out).token
    expect((await cli(['token', 'verify', narrow])).code).toBe(0)
    // Attenuation never widens: a scope the parent lacks is refused.
    expect((await cli(['token', 'attenuate', bob.token, '--scope', 'passport:admin'])).code).not.toBe(0)
    const revoked = await cli(['token', 'revoke', bob.jti, '--json'])
    expect(revoked.code, revoked.err).toBe(0)
    // The parent and what was attenuated from it are refused now: exit 4.
    await expect.poll(async () => (await cli(['token', 'verify', bob.token])).code, { timeout: 5000 }).toBe(ExitCode.Auth)
    expect((await cli(['token', 'verify', narrow])).code).toBe(ExitCode.Auth)
    expect((await cli(['token', 'issue', '--sub', 'x'])).code).not.toBe(0)
    expect((await cli(['token', 'issue', '--sub', 'x', '--aud', 'storage', '--scope', 'storage:read', '--ttl', 'soon'])).code).not.toBe(0)
  })

  it('revokes a jti that begins with "-" when it follows "--", and refuses a revoke without one id', async () => {
    const jti = `-${'Q'.repeat(21)}`
    // Without "--" yargs reads it as short options: a usage error that says what to do.
    const asOptions = await cli(['token', 'revoke', jti])
    expect(asOptions.code).toBe(ExitCode.Usage)
    const revoked = await cli(['token', 'revoke', '--json', '--', jti])
    expect(revoked.code, revoked.err).toBe(0)
    expect(json<{ revoked: string[] }>(revoked.out).revoked).toEqual([jti])
    const none = await cli(['token', 'revoke'])
    expect(none.code).toBe(ExitCode.Usage)
    expect(none.err).toContain('"--"')
    const two = await cli(['token', 'revoke', '--', jti, 'other'])
    expect(two.code).toBe(ExitCode.Usage)
    expect(two.err).toContain('got 2')
    // The message counts the arguments and never echoes them (one could be a token).
    expect(two.err).not.toContain(jti)
  })

  it('proposes, approves and commits a registry entry, reads the head and verifies the log', async () => {
    const file = join(dir, 'descriptor.json')
    await writeFile(file, JSON.stringify({ schemaVersion: 1, items: [{ kind: 'policy', name: 'inproc', rules: { a: 1 } }] }))
    const proposed = await cli(['registry', 'propose', file, '--json'])
    expect(proposed.code, proposed.err).toBe(0)
    const { proposalId } = json<{ proposalId: string }>(proposed.out)
    const approved = await cli(['registry', 'approve', proposalId, '--json'])
    expect(approved.code, approved.err).toBe(0)
    const committed = await cli(['registry', 'commit', proposalId, '--json'])
    expect(committed.code, committed.err).toBe(0)
    const { version } = json<{ version: number }>(committed.out)
    const head = await cli(['registry', 'head', '--json'])
    expect(json<{ version: number }>(head.out).version).toBe(version)
    expect((await cli(['registry', 'head'])).out).toMatch(new RegExp(`^version ${version} `))
    const verify = await cli(['registry', 'verify', '--wait', '0'])
    expect(verify.code, verify.err + verify.out).toBe(0)
    // Committing the same proposal again appends nothing: the same version answers.
    const twice = await cli(['registry', 'commit', proposalId, '--json'])
    expect(twice.code, twice.err).toBe(0)
    expect(json<{ version: number }>(twice.out).version).toBe(version)
    expect(json<{ version: number }>((await cli(['registry', 'head', '--json'])).out).version).toBe(version)
    const watch = await cli(['registry', 'watch', '--from', '0', '--count', '1', '--json'])
    expect(watch.code, watch.err).toBe(0)
    expect(watch.out).toContain('"version":')
    // A malformed descriptor file is refused before anything is sent.
    await writeFile(file, '{not json')
    expect((await cli(['registry', 'propose', file])).code).not.toBe(0)
  })

  it('shows status, peers and doctor findings, and the effective config', async () => {
    const status = await cli(['status', '--json'])
    expect(status.code, status.err).toBe(0)
    expect(json<{ nodeId: string }>(status.out).nodeId).toBe(node.nodeId)
    const table = await cli(['status'])
    expect(table.code).toBe(0)
    expect(table.out).toMatch(/storage/)
    const peers = await cli(['peers', 'ls', '--json'])
    expect(peers.code, peers.err).toBe(0)
    const doctor = await cli(['doctor'])
    expect([0, 1]).toContain(doctor.code)
    expect(doctor.out).toMatch(/^ok {4}node {15}http:\/\/127\.0\.0\.1:\d+ answers, every service ready$/m)
    const printed = await cli(['config', 'print', '--port-base', '7900', '--data-dir', dataDir], { auth: false })
    expect(printed.code, printed.err).toBe(0)
    expect(printed.out).toContain('7900')
    const invalid = await cli(['config', 'validate', '--port-base', 'many'], { auth: false })
    expect(invalid.code).toBe(ExitCode.Usage)
    // A node that is not there: exit 6 (unavailable).
    const down = await runCli(['status', '--node', 'http://127.0.0.1:1'], { stdout: sink(), stderr: sink() })
    expect(down).toBe(ExitCode.Unavailable)
  })
})
