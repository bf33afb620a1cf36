/**
 * The API report (scripts/api-report.ts): per package, `packages/<dir>/api-report.md` lists every
 * entry point's exported names and each export's declaration as the emitted `.d.ts` has it, so a
 * changed signature is a visible diff in review. One TypeScript program serves every package.
 * Regenerate with `UPDATE_API_REPORT=1 npx vitest run packages/core/test/api-report.test.ts`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { apiEntries, buildApiReports, unifiedDiff, type ApiReports } from '../../../scripts/api-report.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const update = process.env.UPDATE_API_REPORT === '1'
const dirs = [...new Set(apiEntries(root).map((e) => e.dir))]

let built: ApiReports | undefined
/** Built once for every test of this file (the program is the slow part). */
const reports = (): ApiReports => (built ??= buildApiReports(root))

describe('API report', () => {
  it('every export of every @ron/core entry has TSDoc', () => {
    const undocumented: string[] = []
    for (const [entry, names] of reports().exports) {
      if (!entry.startsWith('@ron/core')) continue
      for (const n of names) if (!n.documented) undocumented.push(`${entry}: ${n.name}`)
    }
    expect(undocumented).toEqual([])
  }, 300_000)

  it.each(dirs)('packages/%s/api-report.md matches the declarations', (dir) => {
    const path = join(root, 'packages', dir, 'api-report.md')
    const actual = reports().reports.get(dir)!
    if (update) writeFileSync(path, actual)
    const committed = existsSync(path) ? readFileSync(path, 'utf8') : ''
    if (committed !== actual) {
      expect.fail(
        `the public API of packages/${dir} changed; if intended, run\n  UPDATE_API_REPORT=1 npx vitest run packages/core/test/api-report.test.ts\nand commit the diff:\n\n${unifiedDiff(committed, actual, `packages/${dir}/api-report.md`)}`,
      )
    }
  }, 300_000)

  it('the diff names the export whose signature changed', () => {
    const before = '## Declarations\n\n### `a`\n\n```ts\nexport declare function a(x: number): void;\n```\n\n### `b`\n\n```ts\nexport declare const b = 1;\n```\n'
    const after = before.replace('a(x: number)', 'a(x: string)')
    const diff = unifiedDiff(before, after, 'r.md')
    expect(diff).toMatch(/^@@ line \d+ @@ ### `a`$/m)
    expect(diff.indexOf('-export declare function a')).toBeLessThan(diff.indexOf('+export declare function a'))
    expect(diff).toContain('-export declare function a(x: number): void;')
    expect(diff).toContain('+export declare function a(x: string): void;')
    expect(diff).not.toContain('export declare const b')
  })
})
