/**
 * Client commands start fast (issue 24 item 5): `ron-node put` and `get` (and their `--help`)
 * load neither server code (the service packages' entries, the config loader, the logger, etcd)
 * nor zod schemas nor prom-client. The built binary runs with a module hook that writes every URL
 * it loads to a file; the commands talk to a real node started in this process.
 */

import { spawn } from 'node:child_process'
import { isBuiltin } from 'node:module'
import { randomBytes } from 'node:crypto'
import { copyFile, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNode, type RonNode } from '../src/node.js'
import { BIN, assertBuilt } from './helpers.js'

/** What a client command must not load. */
const SERVER_ONLY = [
  /\/node_modules\/(zod|prom-client|smol-toml|pino|etcd3|@grpc|cockatiel|@opentelemetry)\//,
  /\/packages\/(registry|passport|index|interop)\/dist\//,
  /\/packages\/(core|storage)\/dist\/index\.js$/,
]

let dir: string
let node: RonNode
let hook: string

beforeAll(async () => {
  assertBuilt()
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-startup-'))
  // A module hook (node:module register) that appends every loaded URL to $RON_LOADED_LOG.
  await writeFile(
    join(dir, 'hooks.mjs'),
    "import { appendFileSync } from 'node:fs'\nexport async function load(url, context, next) {\n  appendFileSync(process.env.RON_LOADED_LOG, url + '\\n')\n  return next(url, context)\n}\n",
  )
  hook = join(dir, 'register.mjs')
  // The hook sees ESM loads; modules loaded with require() (native bindings among them) are listed from the CommonJS cache at exit.
  await writeFile(
    hook,
    [
      "import { appendFileSync } from 'node:fs'",
      "import { createRequire, register } from 'node:module'",
      "import { pathToFileURL } from 'node:url'",
      `register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)})`,
      'const cache = createRequire(import.meta.url).cache',
      "process.on('exit', () => appendFileSync(process.env.RON_LOADED_LOG, Object.keys(cache).map((p) => pathToFileURL(p).href + '\\n').join('')))",
      '',
    ].join('\n'),
  )
  node = await startNode({ amnesia: true, portBase: 0, services: ['storage'], drainDeadlineMs: 300 })
  await node.whenReady(AbortSignal.timeout(20_000))
}, 60_000)
afterAll(async () => {
  await node?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

/** Runs `node <argv>` to its exit; resolves with its exit code, stdout and stderr. */
async function runNode(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
}

/** Runs the built `ron-node` with the hook; resolves with its exit code, stdout and the loaded URLs. */
async function loaded(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; urls: string[] }> {
  const log = join(dir, `loaded-${Math.random().toString(36).slice(2)}.txt`)
  await writeFile(log, '')
  const { code, stdout, stderr } = await runNode(['--import', pathToFileURL(hook).href, BIN, ...args], { ...process.env, RON_LOADED_LOG: log })
  const urls = (await readFile(log, 'utf8')).split('\n').filter((u) => u !== '')
  return { code, stdout, stderr, urls: await withBundledInputs(urls) }
}

/**
 * The executable is a bundle (tsup.bin.config.ts): each of its files that `urls` names stands for
 * the modules bundled into it (from the build's metafile), which are added as file URLs. A file
 * holds modules it may initialise only on use, so this over-counts: a check that a URL is absent
 * stays as strict as before.
 */
async function withBundledInputs(urls: string[]): Promise<string[]> {
  const cliDir = dirname(dirname(BIN))
  const meta = JSON.parse(await readFile(join(cliDir, 'dist/metafile-esm.json'), 'utf8')) as {
    inputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }>
    outputs: Record<string, { inputs: Record<string, unknown> }>
  }
  const loaded = new Set<string>()
  for (const u of urls) {
    const output = meta.outputs[relativeTo(cliDir, u)]
    if (output !== undefined) for (const input of Object.keys(output.inputs)) loaded.add(input)
  }
  // A module that only re-exports (e.g. @ron/storage/dist/client.js) is in no output: it counts as
  // loaded when everything it imports is.
  const placed = new Set(Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs)))
  for (const [input, { imports }] of Object.entries(meta.inputs)) {
    const bundled = imports.filter((i) => i.external !== true)
    if (!placed.has(input) && bundled.length > 0 && bundled.every((i) => loaded.has(i.path))) loaded.add(input)
  }
  return [...urls, ...[...loaded].map((input) => pathToFileURL(resolve(cliDir, input)).href)]
}

/** `url`'s path relative to `dir` with forward slashes (how the metafile names outputs), or '' outside it. */
function relativeTo(dir: string, url: string): string {
  if (!url.startsWith('file:')) return ''
  const path = fileURLToPath(url)
  return path.startsWith(dir + '/') ? path.slice(dir.length + 1) : ''
}

function serverModules(urls: string[]): string[] {
  return urls.filter((u) => SERVER_ONLY.some((re) => re.test(u)))
}

describe('client commands load no server code', () => {
  it('put and get round-trip through a node loading only the client entries', async () => {
    const file = join(dir, 'in.txt')
    await writeFile(file, 'fast start\n')
    const put = await loaded(['put', file, '--node', node.admin, '--token', node.token!])
    expect(put.code, put.stderr).toBe(0)
    const address = put.stdout.trim()
    expect(address).toMatch(/^b3:[0-9a-f]{64}$/)
    // The hook saw the command run (it is not a vacuous pass): the client entries were loaded.
    expect(put.urls.some((u) => u.endsWith('/packages/storage/dist/client.js'))).toBe(true)
    expect(put.urls.some((u) => u.endsWith('/packages/core/dist/client.js'))).toBe(true)
    expect(serverModules(put.urls)).toEqual([])

    const out = join(dir, 'out.txt')
    const get = await loaded(['get', address, '-o', out, '--node', node.admin, '--token', node.token!])
    expect(get.code, get.stderr).toBe(0)
    expect(await readFile(out, 'utf8')).toBe('fast start\n')
    expect(serverModules(get.urls)).toEqual([])
    // put never hashes (the node computes the address): the BLAKE3 binding is left unloaded; get
    // verifies what it receives, so it loads it (which shows the CommonJS list is not empty).
    const binding = (u: string): boolean => /\/node_modules\/@napi-rs\/blake-hash/.test(u)
    expect(put.urls.filter(binding)).toEqual([])
    expect(get.urls.some(binding)).toBe(true)
  })

  it('a failing put (node down) loads no server code either, and --help loads no RON package at all', async () => {
    const file = join(dir, 'down.txt')
    await writeFile(file, 'nowhere to go\n')
    const down = await loaded(['put', file, '--node', 'http://127.0.0.1:1', '--token', 'x'])
    expect(down.code).toBe(6)
    expect(down.stderr).toMatch(/^ron-node: /)
    expect(serverModules(down.urls)).toEqual([])
    for (const cmd of ['put', 'get']) {
      const help = await loaded([cmd, '--help'])
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(new RegExp(`ron-node ${cmd} `))
      expect(help.urls.filter((u) => /\/packages\/(?!cli\/)[a-z]+\/dist\//.test(u))).toEqual([])
    }
  })
})

describe('client commands skip work they do not need', () => {
  /**
   * Runs the built `ron-node` with a preload that logs each call of the global `fetch` (which loads
   * Node's bundled undici besides npm undici) and of `Intl.Segmenter#segment` (string-width's
   * work, i.e. yargs laying out help text); resolves with the exit code and the logged calls.
   */
  async function traced(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; calls: string[] }> {
    const log = join(dir, `calls-${Math.random().toString(36).slice(2)}.txt`)
    await writeFile(log, '')
    const preload = join(dir, 'trace-calls.mjs')
    await writeFile(
      preload,
      [
        "import { appendFileSync } from 'node:fs'",
        'const note = (what) => appendFileSync(process.env.RON_CALLS_LOG, what + "\\n")',
        'const fetch = globalThis.fetch',
        "globalThis.fetch = function (...a) { note('fetch'); return fetch.apply(this, a) }",
        'const segment = Intl.Segmenter.prototype.segment',
        "Intl.Segmenter.prototype.segment = function (...a) { note('segment'); return segment.apply(this, a) }",
        '',
      ].join('\n'),
    )
    const { code, stdout, stderr } = await runNode(['--import', pathToFileURL(preload).href, BIN, ...args], { ...process.env, RON_CALLS_LOG: log })
    const calls = (await readFile(log, 'utf8')).split('\n').filter((c) => c !== '')
    return { code, stdout, stderr, calls }
  }

  it('put neither lays out yargs help text nor calls the global fetch; --help still lays it out', async () => {
    const file = join(dir, 'traced.txt')
    await writeFile(file, 'no help needed\n')
    const put = await traced(['put', file, '--node', node.admin, '--token', node.token!])
    expect(put.code, put.stderr).toBe(0)
    expect(put.stdout.trim()).toMatch(/^b3:[0-9a-f]{64}$/)
    expect(put.calls).toEqual([])
    // The trace sees help being laid out (not a vacuous pass), and help still comes out.
    const help = await traced(['put', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/ron-node put /)
    expect(help.calls).toContain('segment')
  })
})

describe('client commands exit once their work is done', () => {
  /** Runs the built `ron-node` under V8's wasm compile trace (printed on stdout, one line per function compiled). */
  async function compiles(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return runNode(['--trace-wasm-compilation-times', BIN, ...args])
  }

  it('put and get never start an optimising compile of the HTTP parser (its exit would wait for it)', async () => {
    // Enough responses for V8 to tier llhttp's wasm up without the fix: a put, then gets of it.
    const file = join(dir, 'tier.bin')
    await writeFile(file, Buffer.alloc(256 * 1024, 7))
    const put = await compiles(['put', file, '--node', node.admin, '--token', node.token!])
    expect(put.code, put.stderr).toBe(0)
    const address = /^b3:[0-9a-f]{64}$/m.exec(put.stdout)?.[0]
    expect(address, put.stdout).toBeDefined()
    // The trace sees the parser compiled (not a vacuous pass): by the baseline compiler only.
    expect(put.stdout).toMatch(/using Liftoff/)
    expect(put.stdout).not.toMatch(/using TurboFan/)
    for (let i = 0; i < 3; i++) {
      const get = await compiles(['get', address!, '-o', join(dir, `tier-${i}.bin`), '--node', node.admin, '--token', node.token!])
      expect(get.code, get.stderr).toBe(0)
      expect(get.stdout).toMatch(/using Liftoff/)
      expect(get.stdout).not.toMatch(/using TurboFan/)
    }
    expect((await readFile(join(dir, 'tier-2.bin'))).equals(await readFile(file))).toBe(true)
  })

  it('a get into a slow pipe writes every byte before it exits 0 (the bin exits once stdout is flushed)', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17)
    const file = join(dir, 'piped.bin')
    await writeFile(file, data)
    const put = await compiles(['put', file, '--node', node.admin, '--token', node.token!])
    const address = /^b3:[0-9a-f]{64}$/m.exec(put.stdout)![0]
    const child = spawn(process.execPath, [BIN, 'get', address, '--node', node.admin, '--token', node.token!], { stdio: ['ignore', 'pipe', 'pipe'] })
    const chunks: Buffer[] = []
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    // A reader slower than the writer: the pipe fills and the get's writes wait for it.
    child.stdout.on('data', (d: Buffer) => {
      chunks.push(d)
      child.stdout.pause()
      setTimeout(() => child.stdout.resume(), 2)
    })
    // 'close': the process exited and its stdout reached its end.
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
    expect(code, stderr).toBe(0)
    const got = Buffer.concat(chunks)
    expect(got.length).toBe(data.length)
    expect(got.equals(data)).toBe(true)
  })
})

describe('the bundled executable (tsup.bin.config.ts)', () => {
  it('imports at run time only builtins and packages ron-node depends on, and no @ron/* package', async () => {
    const cliDir = dirname(dirname(BIN))
    const meta = JSON.parse(await readFile(join(cliDir, 'dist/metafile-esm.json'), 'utf8')) as {
      outputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }>
    }
    const manifest = JSON.parse(await readFile(join(cliDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    const externals = new Set(Object.values(meta.outputs).flatMap((o) => o.imports.filter((i) => i.external === true).map((i) => i.path)))
    const packageOf = (spec: string): string => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/')
    const packages = [...externals].filter((p) => !p.startsWith('node:') && !isBuiltin(p)).map(packageOf)
    // The check sees the externals (lmdb is one: a native addon) …
    expect(packages).toContain('lmdb')
    // … each resolves from dist/ in an installed ron-node only if ron-node depends on it; a @ron/*
    // import would load a second copy beside the bundled one.
    expect(packages.filter((p) => manifest.dependencies[p] === undefined)).toEqual([])
    expect(packages.filter((p) => p.startsWith('@ron/'))).toEqual([])
  })

  it('is ASCII only and holds zod English locale and no other', async () => {
    const cliDir = dirname(dirname(BIN))
    const meta = JSON.parse(await readFile(join(cliDir, 'dist/metafile-esm.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> }
    const files = Object.keys(meta.outputs).filter((o) => o.endsWith('.js'))
    // A file with one non-ASCII character is held by V8 as a two-byte string (see asciiOutputs).
    const nonAscii: string[] = []
    for (const f of files) {
      const bytes = await readFile(join(cliDir, f))
      if (bytes.some((b) => b > 0x7f)) nonAscii.push(f)
    }
    expect(nonAscii).toEqual([])
    // (The locales index itself is the build's stub, which re-exports en.js only.)
    const locales = Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs).filter((i) => /node_modules\/zod\/v4\/locales\/(?!index\.js)[\w-]+\.js$/.test(i)))
    expect(locales.map((l) => l.split('/').at(-1))).toEqual(['en.js'])
  })
})

describe('bin/ron-node.js', () => {
  const launcher = fileURLToPath(new URL('../bin/ron-node.js', import.meta.url))

  /** Runs a copy of the launcher in `pkg/bin/` (a package layout without the real build). */
  async function run(pkg: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    await mkdir(join(pkg, 'bin'), { recursive: true })
    await copyFile(launcher, join(pkg, 'bin', 'ron-node.js'))
    return runNode([join(pkg, 'bin', 'ron-node.js'), '--version'])
  }

  it('imports dist/bin.js directly when it is there', async () => {
    const pkg = join(dir, 'pkg-built')
    await mkdir(join(pkg, 'dist'), { recursive: true })
    await writeFile(join(pkg, 'package.json'), '{"type":"module"}')
    await writeFile(join(pkg, 'dist', 'bin.js'), "process.stdout.write('ran dist ' + process.argv.slice(2).join(' '))\n")
    const r = await run(pkg)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toBe('ran dist --version')
  })

  it('says to build when neither the build nor the sources are there, or a package the build imports is not built', async () => {
    const empty = join(dir, 'pkg-empty')
    await mkdir(empty, { recursive: true })
    await writeFile(join(empty, 'package.json'), '{"type":"module"}')
    const r = await run(empty)
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^ron-node: the build is missing \(.*dist\/bin\.js\)\.\nron-node: run `npm run build`/)
    const partial = join(dir, 'pkg-partial')
    await mkdir(join(partial, 'dist'), { recursive: true })
    await writeFile(join(partial, 'package.json'), '{"type":"module"}')
    await writeFile(join(partial, 'dist', 'bin.js'), "import './not-built-yet.js'\n")
    const p = await run(partial)
    expect(p.code).toBe(1)
    expect(p.stderr).toMatch(/^ron-node: the build is missing \(.*not-built-yet\.js/)
  })
})

describe('npm start builds only what changed (scripts/build-stale.js)', () => {
  const script = fileURLToPath(new URL('../../../scripts/build-stale.js', import.meta.url))

  async function stale(root: string): Promise<string> {
    const child = spawn(process.execPath, [script, '--root', root, '--dry-run'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code).toBe(0)
    return stdout.trim()
  }

  /** Writes `path` (creating its directory) with its modification time `t` seconds into 2026. */
  async function file(path: string, t: number, text = 'x'): Promise<void> {
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, t))
    await mkdir(join(path, '..'), { recursive: true })
    await writeFile(path, text)
    await utimes(path, at, at)
  }

  it('names the packages whose sources are newer than their dist/, in workspace order, and nothing once built', async () => {
    const root = join(dir, 'ws')
    await file(join(root, 'package.json'), 0, JSON.stringify({ workspaces: ['packages/a', 'packages/b', 'packages/c', 'packages/d'] }))
    for (const p of ['a', 'b', 'c', 'd']) await file(join(root, 'packages', p, 'package.json'), 1, JSON.stringify({ scripts: p === 'c' ? {} : { build: 'tsup' } }))
    // a: a source edited after the build; b: built after its sources; c: no build; d: never built.
    await file(join(root, 'packages/a/src/deep/x.ts'), 30)
    await file(join(root, 'packages/a/dist/index.js'), 20)
    await file(join(root, 'packages/a/dist/chunk.js'), 21)
    await file(join(root, 'packages/b/src/x.ts'), 10)
    await file(join(root, 'packages/b/dist/index.js'), 20)
    await file(join(root, 'packages/c/src/x.ts'), 30)
    await file(join(root, 'packages/d/src/x.ts'), 10)
    expect(await stale(root)).toBe('packages/a\npackages/d')
    await file(join(root, 'packages/a/dist/index.js'), 40)
    await file(join(root, 'packages/a/dist/chunk.js'), 40)
    await file(join(root, 'packages/d/dist/index.js'), 40)
    expect(await stale(root)).toBe('up to date')
    // A changed build config counts as a change.
    await file(join(root, 'packages/b/tsup.config.ts'), 50)
    expect(await stale(root)).toBe('packages/b')
  })

  it('rebuilds a package that bundles its workspace dependencies when one of them is stale or was rebuilt after it', async () => {
    const root = join(dir, 'ws-bundle')
    await file(join(root, 'package.json'), 0, JSON.stringify({ workspaces: ['packages/lib', 'packages/other', 'packages/app', 'packages/plain'] }))
    await file(join(root, 'packages/lib/package.json'), 1, JSON.stringify({ name: '@x/lib', scripts: { build: 'tsup' } }))
    await file(join(root, 'packages/other/package.json'), 1, JSON.stringify({ name: '@x/other', scripts: { build: 'tsup' } }))
    // app bundles @x/lib (it has tsup.bin.config.ts); plain depends on it without bundling.
    await file(join(root, 'packages/app/package.json'), 1, JSON.stringify({ name: 'app', scripts: { build: 'tsup' }, dependencies: { '@x/lib': '^1' } }))
    await file(join(root, 'packages/app/tsup.bin.config.ts'), 1)
    await file(join(root, 'packages/plain/package.json'), 1, JSON.stringify({ name: 'plain', scripts: { build: 'tsup' }, dependencies: { '@x/lib': '^1' } }))
    for (const p of ['lib', 'other', 'app', 'plain']) await file(join(root, 'packages', p, 'src/x.ts'), 10)
    for (const p of ['lib', 'other', 'app', 'plain']) await file(join(root, 'packages', p, 'dist/index.js'), 20)
    expect(await stale(root)).toBe('up to date')
    // lib's source changed: lib and app (which bundles it) are stale; plain imports lib at run time.
    await file(join(root, 'packages/lib/src/x.ts'), 30)
    expect(await stale(root)).toBe('packages/lib\npackages/app')
    // lib rebuilt after app's build: app still bundles the old lib.
    await file(join(root, 'packages/lib/dist/index.js'), 40)
    expect(await stale(root)).toBe('packages/app')
    // A rebuild of a package app does not depend on changes nothing.
    await file(join(root, 'packages/app/dist/index.js'), 50)
    await file(join(root, 'packages/other/dist/index.js'), 60)
    expect(await stale(root)).toBe('up to date')
  })
})
