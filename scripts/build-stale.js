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
const INPUTS = ['src', 'package.json', 'tsup.config.ts', 'tsconfig.build.json']

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
  for (const ws of pkg.workspaces ?? []) {
    const dir = join(root, ws)
    const manifest = /** @type {{ scripts?: Record<string, string> }} */ (readJson(join(dir, 'package.json')))
    if (manifest.scripts?.['build'] === undefined) continue
    const newestInput = Math.max(...INPUTS.map((f) => mtime(join(dir, f), Math.max) ?? 0))
    // tsup cleans dist/ and writes it whole: its oldest .js file is when the last build ran.
    const built = mtime(join(dir, 'dist'), Math.min, (f) => f.endsWith('.js'))
    if (built === undefined || newestInput > built) out.push(ws)
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
