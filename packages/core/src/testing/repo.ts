/**
 * Files of the RON repository for tests and doc generators: the root is found by walking up from
 * this module to the `package.json` whose `name` is `ron`, so a test names a repo file by its
 * repo-relative path (`repoPath('docs/errors.md')`) and never climbs with `../../../..`.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

let root: string | undefined

/**
 * The repository's root directory (where the `package.json` named `ron` is).
 * @throws {Error} when no such `package.json` is above this module (an installed copy of `@ron/core`).
 */
export function repoRoot(): string {
  if (root !== undefined) return root
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const pkg = join(dir, 'package.json')
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'ron') return (root = dir)
    const up = dirname(dir)
    if (up === dir) throw new Error('repoRoot: no package.json named "ron" above @ron/core/testing')
    dir = up
  }
}

/**
 * The absolute path of a repo file from its repo-relative path.
 * @example `readFileSync(repoPath('docs/errors.md'), 'utf8')`
 */
export function repoPath(relative: string): string {
  return join(repoRoot(), relative)
}

/** The text (UTF-8) of a repo file, from its repo-relative path. */
export function readRepoFile(relative: string): string {
  return readFileSync(repoPath(relative), 'utf8')
}
