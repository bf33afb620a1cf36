// Checks what `npm publish` would ship, the way a user meets it: `npm pack` every workspace into a
// temporary directory, install the tarballs (and the third-party dependencies they name, from the
// npm registry) into an empty ESM app and an empty CommonJS app, and in each one import every
// entry point of every package, make one real call per entry, and run `npx ron-node --version`.
// It also typechecks the ESM app against the packed declarations (a `.d.ts` that imports a dev
// dependency, or an `exports` entry without `types`, fails here and not at a user's desk).
//
// Run after `npm run build`: `npm run pack:check` (`tsx scripts/pack-check.ts [--keep]`).
// Exit status 0 when both apps pass; the temporary directory is removed unless `--keep`.

import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const keep = process.argv.includes('--keep')
const started = Date.now()
const work = mkdtempSync(join(tmpdir(), 'ron-pack-check-'))
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The fields of a workspace's package.json this check reads. */
interface Manifest {
  name: string
  version: string
  workspaces?: string[]
  exports?: Record<string, string | Record<string, string>>
  bin?: Record<string, string>
  repository?: { directory?: string }
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  [field: string]: unknown
}

/** One package of `npm pack --json`. */
interface Packed {
  name: string
  filename: string
  size: number
  entryCount: number
  files: { path: string }[]
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T

/** Runs a command, echoing it; its output is returned (and shown when it fails). */
function run(cmd: string, args: string[], cwd: string): string {
  process.stdout.write(`$ (${cwd === root ? '.' : cwd.replace(work, '$TMP')}) ${cmd} ${args.join(' ')}\n`)
  const t0 = Date.now()
  try {
    const out = execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    if (Date.now() - t0 > 5000) process.stdout.write(`  (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`)
    return out
  } catch (e) {
    const { stdout, stderr } = e as { stdout?: string; stderr?: string }
    process.stdout.write(`${stdout ?? ''}${stderr ?? ''}`)
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}`)
  }
}

function fail(message: string): never {
  throw new Error(message)
}

// The known answer of one call into @ron/core: BLAKE3("abc") (the BLAKE3 test vector).
const ABC_B3 = 'b3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85'

try {
  const rootPkg = readJson<Manifest>(join(root, 'package.json'))
  const packages = (rootPkg.workspaces ?? []).map((dir) => ({ dir, pkg: readJson<Manifest>(join(root, dir, 'package.json')) }))

  // 1. Pack every workspace; check each tarball holds what its package.json promises.
  const tarballs = join(work, 'tarballs')
  mkdirSync(tarballs)
  const packed = JSON.parse(run(npm, ['pack', '--workspaces', '--json', '--pack-destination', tarballs], root)) as Packed[]
  for (const { dir, pkg } of packages) {
    const entry = packed.find((p) => p.name === pkg.name) ?? fail(`npm pack did not pack ${pkg.name}`)
    const files = new Set(entry.files.map((f) => f.path))
    for (const required of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']) {
      if (!files.has(required)) fail(`${pkg.name}: the tarball has no ${required}`)
    }
    for (const f of files) if (/^(src|test)\//.test(f) || f.endsWith('.test.js') || f.endsWith('.tsbuildinfo')) fail(`${pkg.name}: the tarball ships ${f}`)
    for (const [key, target] of Object.entries(pkg.exports ?? {})) {
      if (typeof target !== 'object' || !('default' in target)) fail(`${pkg.name}: exports["${key}"] has no "default" condition`)
      for (const [cond, file] of Object.entries(target)) {
        if (!files.has(file.replace(/^\.\//, ''))) fail(`${pkg.name}: exports["${key}"].${cond} → ${file} is not in the tarball (run npm run build?)`)
      }
    }
    for (const file of Object.values(pkg.bin ?? {})) if (!files.has(file.replace(/^\.\//, ''))) fail(`${pkg.name}: bin ${file} is not in the tarball`)
    for (const field of ['license', 'repository', 'bugs', 'homepage', 'keywords', 'engines', 'files']) {
      if (pkg[field] === undefined) fail(`${pkg.name}: package.json has no "${field}"`)
    }
    if (pkg.repository?.directory !== dir) fail(`${pkg.name}: repository.directory is ${pkg.repository?.directory}, not ${dir}`)
    for (const [name, range] of Object.entries(pkg.dependencies ?? {})) {
      const internal = packages.find((p) => p.pkg.name === name)
      if (internal !== undefined && !range.startsWith('^') && range !== '*') fail(`${pkg.name}: internal dependency ${name}@${range} is not a workspace range`)
    }
    process.stdout.write(`  ${entry.filename}: ${entry.entryCount} files, ${(entry.size / 1024).toFixed(0)} KiB\n`)
  }
  const version = Object.fromEntries(packages.map(({ pkg }) => [pkg.name, pkg.version]))
  const tarballOf = Object.fromEntries(packed.map((p) => [p.name, `file:${join(tarballs, p.filename)}`]))

  // Every entry point: `name` or `name/sub` for each key of each package's exports.
  const entries = packages.flatMap(({ pkg }) => Object.keys(pkg.exports ?? {}).map((k) => (k === '.' ? pkg.name : `${pkg.name}/${k.slice(2)}`)))

  // 2. One call per entry point. `mod(name)` is `import()` in the ESM app and `require()` in
  // the CommonJS app (Node >= 20.19 loads these ESM packages through require()).
  const calls = `
const expected = ${JSON.stringify(version)}
const seen = []
function eq(actual, want, what) {
  if (actual !== want) throw new Error(what + ': got ' + JSON.stringify(actual) + ', expected ' + JSON.stringify(want))
  seen.push(what)
}
/** GET /version of a service (it must report its package's version), then close it. */
async function versionOf(name, svc) {
  try {
    const res = await svc.fetch(new Request('http://ron.invalid/version'))
    eq(res.status, 200, name + ' GET /version status')
    eq((await res.json()).version, expected[name], name + ' /version')
  } finally {
    await svc.close()
  }
}
async function main() {
  // The services' timers are unref()ed (an embedded service must not hold its host's process
  // open), so close() of storage, which waits \`shutdown.writesFirstMs\` on such a timer, needs
  // something else to keep this otherwise idle script alive until it returns.
  const alive = setInterval(() => {}, 60_000)
  try {
    await checks()
  } finally {
    clearInterval(alive)
  }
}
async function checks() {
  const loaded = {}
  for (const name of ${JSON.stringify(entries)}) loaded[name] = await mod(name)
  const core = loaded['@ron/core']
  eq(core.toAddress(core.blake3(new TextEncoder().encode('abc'))), '${ABC_B3}', '@ron/core blake3')

  // The core subpaths (@ron/core/http, /concurrency, …) share one module graph with the root:
  // a name both export is the same object (instanceof RonError holds across entries).
  for (const name of Object.keys(loaded).filter((n) => n.startsWith('@ron/core/') && n !== '@ron/core/testing')) {
    const shared = Object.keys(loaded[name]).filter((k) => k in core)
    if (shared.length === 0) throw new Error(name + ' shares no export with @ron/core')
    for (const k of shared) if (loaded[name][k] !== core[k]) throw new Error(name + '.' + k + ' is not the object @ron/core exports')
    seen.push(name + ' (' + shared.length + ' shared names)')
  }
  const q = new (loaded['@ron/core/concurrency'].BoundedQueue)({ name: 'pack', capacity: 1 })
  q.trySend('a')
  try { q.trySend('b'); throw new Error('a full BoundedQueue accepted a second item') } catch (e) { eq(e instanceof loaded['@ron/core/base'].BusyError, true, '@ron/core/concurrency BoundedQueue full → BusyError of @ron/core/base') }
  eq(loaded['@ron/core/hash'].toAddress(loaded['@ron/core/hash'].blake3(new TextEncoder().encode('abc'))), '${ABC_B3}', '@ron/core/hash blake3')

  const clock = new (loaded['@ron/core/testing'].VirtualClock)(1000)
  await clock.advance(5)
  eq(clock.now(), 1005, '@ron/core/testing VirtualClock')

  const storage = await loaded['@ron/storage'].createStorageService({})
  const put = await storage.store.put((async function* () { yield new TextEncoder().encode('abc') })())
  eq(put.address, '${ABC_B3}', '@ron/storage store.put')
  await versionOf('@ron/storage', storage)

  eq(typeof loaded['@ron/storage/testing'].blobStoreCompliance, 'function', '@ron/storage/testing blobStoreCompliance')

  const registry = loaded['@ron/registry']
  const alice = registry.generateSignerKey('alice')
  await versionOf('@ron/registry', await registry.createRegistryService({ signers: { threshold: 1, signers: [{ id: 'alice', publicKey: alice.publicKey }] } }))
  await versionOf('@ron/passport', await loaded['@ron/passport'].createPassportService({}))
  await versionOf('@ron/index', await loaded['@ron/index'].createIndexService({}))
  await versionOf('@ron/interop', await loaded['@ron/interop'].createInteropService({}))

  eq(typeof loaded['ron-node'].startNode, 'function', 'ron-node startNode')
  console.log('ok: ' + seen.length + ' checks (' + Object.keys(loaded).length + ' entry points)')
}
main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
`
  const apps = [
    { name: 'esm', type: 'module', file: 'check.mjs', head: 'const mod = (name) => import(name)\n' },
    { name: 'cjs', type: 'commonjs', file: 'check.cjs', head: 'const mod = (name) => require(name)\n' },
  ]
  // Optional peers the testing entries need (`@ron/core/testing` → fast-check, `@ron/storage/testing` → vitest).
  const peers = { 'fast-check': rootPkg.devDependencies?.['fast-check'], vitest: rootPkg.devDependencies?.['vitest'] }
  for (const app of apps) {
    const dir = join(work, app.name)
    mkdirSync(dir)
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: `ron-pack-check-${app.name}`, private: true, type: app.type, dependencies: { ...tarballOf, ...peers } }, null, 2)}\n`,
    )
    run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], dir)
    // The @ron/* packages ron-node depends on (`^0.1.0`) must be the packed ones, not the registry's.
    for (const name of Object.keys(tarballOf)) {
      const installed = join(dir, 'node_modules', name, 'package.json')
      if (!existsSync(installed)) fail(`${app.name}: ${name} is not installed`)
      const lock = readJson<{ packages: Record<string, { resolved?: string }> }>(join(dir, 'package-lock.json'))
      for (const [path, meta] of Object.entries(lock.packages)) {
        if (path.endsWith(`node_modules/${name}`) && !String(meta.resolved).startsWith('file:')) fail(`${app.name}: ${path} came from ${meta.resolved}, not a packed tarball`)
      }
    }
    writeFileSync(join(dir, app.file), app.head + calls)
    const out = run(process.execPath, [app.file], dir)
    process.stdout.write(out)
    // A promise nothing waits on lets node exit 0 half-way: require the last line.
    if (!/^ok: \d+ checks/m.test(out)) fail(`${app.name}: ${app.file} stopped before its last check`)
    const v = run(npm, ['exec', '--no', '--', 'ron-node', '--version'], dir).trim()
    if (v !== version['ron-node']) fail(`${app.name}: npx ron-node --version printed ${JSON.stringify(v)}, expected ${version['ron-node']}`)
    process.stdout.write(`  npx ron-node --version: ${v}\n`)
  }

  // 3. The packed declarations typecheck in a strict NodeNext app (the repo's TypeScript).
  const esm = join(work, 'esm')
  writeFileSync(
    join(esm, 'types.mts'),
    `${entries.map((e, i) => `import * as m${i} from '${e}'`).join('\n')}
import { blake3, toAddress } from '@ron/core'
import { createStorageService, type StorageService } from '@ron/storage'
const address: string = toAddress(blake3(new Uint8Array([1])))
const storage: StorageService = await createStorageService({ version: address })
await storage.close()
export const all = [${entries.map((_, i) => `m${i}`).join(', ')}]
`,
  )
  writeFileSync(
    join(esm, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        files: ['types.mts'],
      },
      null,
      2,
    )}\n`,
  )
  const tsc = run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], esm)
  process.stdout.write(tsc)
  process.stdout.write(`  types: ${entries.length} entry points typecheck under NodeNext\n`)

  process.stdout.write(`pack check: ok (${packages.length} packages, ESM and CommonJS apps) in ${((Date.now() - started) / 1000).toFixed(0)} s\n`)
} catch (e) {
  process.stdout.write(`pack check: FAILED: ${e instanceof Error ? e.message : String(e)}\n`)
  process.exitCode = 1
} finally {
  if (keep) process.stdout.write(`kept ${work}\n`)
  else rmSync(work, { recursive: true, force: true })
}
