#!/usr/bin/env node
// Builds only the workspace packages whose build is missing or older than their sources, in
// workspace order (what `npm start` runs before starting the node). With nothing changed it only
// reads file times (a few ms) and starts nothing. Plain JavaScript: it must run before any build
// and without tsx.
//
//   node scripts/build-stale.js            build what is stale
//   node scripts/build-stale.js --dry-run  print what is stale, build nothing
//   --root <dir>                            another repository root (tests)
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

/** Files of a package whose change changes its build. */
const INPUTS = ['src', 'package.json', 'tsup.config.ts', 'tsup.bin.config.ts', 'tsconfig.build.json']
/**
 * A package with this file bundles the built workspace packages it depends on (`ron-node`'s
 * executable): it is stale too when one of them is, or was built after it.
 */
const BUNDLES = 'tsup.bin.config.ts'

/**
 * Newest (`pick` = Math.max) or oldest (Math.min) modification time of the files under `path`.
 * @param {string} path
 * @param {(a: number, b: number) => number} pick
 * @param {(name: string) => boolean} [keep] which file names count
 * @returns {number | undefined} undefined when there is no such file
 */
function mtime(path, pick, keep = () => true) {
  if (!existsSync(path)) return undefined
  const st = statSync(path)
  if (!st.isDirectory()) return keep(path) ? st.mtimeMs : undefined
  let out
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const t = mtime(join(path, e.name), pick, keep)
    if (t !== undefined) out = out === undefined ? t : pick(out, t)
  }
  return out
}

/**
 * @param {string} path
 * @returns {unknown}
 */
function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'))
}

/**
 * The workspace packages (directories relative to `root`, in workspace order) whose `dist/` is
 * missing or older than a source file.
 * @param {string} root the repository root (its package.json lists the workspaces)
 * @returns {string[]}
 */
export function staleWorkspaces(root) {
  const pkg = /** @type {{ workspaces?: string[] }} */ (readJson(join(root, 'package.json')))
  /** @type {string[]} */
  const out = []
  /** Workspace packages seen so far by name: stale or not, and when their build last wrote. @type {Map<string, { stale: boolean, wrote: number }>} */
  const seen = new Map()
  for (const ws of pkg.workspaces ?? []) {
    const dir = join(root, ws)
    const manifest = /** @type {{ name?: string, scripts?: Record<string, string>, dependencies?: Record<string, string> }} */ (readJson(join(dir, 'package.json')))
    if (manifest.scripts?.['build'] === undefined) continue
    const newestInput = Math.max(...INPUTS.map((f) => mtime(join(dir, f), Math.max) ?? 0))
    const isJs = (/** @type {string} */ f) => f.endsWith('.js')
    // tsup cleans dist/ and writes it whole: its oldest .js file is when the last build ran.
    const built = mtime(join(dir, 'dist'), Math.min, isJs)
    let stale = built === undefined || newestInput > built
    if (!stale && existsSync(join(dir, BUNDLES))) {
      for (const dep of Object.keys(manifest.dependencies ?? {})) {
        const d = seen.get(dep)
        if (d !== undefined && (d.stale || d.wrote > /** @type {number} */ (built))) stale = true
      }
    }
    if (manifest.name !== undefined) seen.set(manifest.name, { stale, wrote: mtime(join(dir, 'dist'), Math.max, isJs) ?? 0 })
    if (stale) out.push(ws)
  }
  return out
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--root')
  const given = at > 0 ? process.argv[at + 1] : undefined
  const root = given !== undefined ? resolve(given) : fileURLToPath(new URL('..', import.meta.url))
  const stale = staleWorkspaces(root)
  if (process.argv.includes('--dry-run')) {
    process.stdout.write(stale.length === 0 ? 'up to date\n' : `${stale.join('\n')}\n`)
  } else {
    for (const ws of stale) {
      process.stderr.write(`build-stale: building ${ws} (sources newer than dist/)\n`)
      const r = spawnSync('npm', ['run', 'build', '--workspace', ws], { cwd: root, stdio: 'inherit' })
      if (r.status !== 0) process.exit(r.status ?? 1)
    }
  }
}
