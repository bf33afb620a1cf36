/**
 * `docs/security.md` links every claim to the test that proves it: this keeps the links honest.
 * Every relative link names a file that exists; every test named after a link
 * (`[file](../path) › “test name”`, several separated by `;`) is a test of that file (the text up to
 * an ellipsis; `%s` stands for a table test's parameter); and every finding of the security review
 * has a test against real processes (a `packages/cli/test/*.e2e.test.ts` link in its row).
 */

import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const DOC = fileURLToPath(new URL('./security.md', import.meta.url))
const text = readFileSync(DOC, 'utf8')

/** Whitespace folded (names are wrapped across lines) and typographic apostrophes made plain. */
const fold = (s: string): string => s.replace(/\s+/g, ' ').replace(/’/g, "'")

describe('docs/security.md', () => {
  it('links only to files that exist', () => {
    const missing = [...text.matchAll(/\]\((\.\.\/[^)#\s]+)\)/g)].map((m) => m[1]!).filter((p) => !existsSync(join(dirname(DOC), p)))
    expect(missing).toEqual([])
  })

  it('names only tests that exist in the file it links', () => {
    const named = [...text.matchAll(/\]\((\.\.\/[^)\s]+\.test\.ts)\)((?:\s*›\s*“[^”]+”;?)+)/g)]
    // The doc names some fifty tests this way; a parse that finds none is itself a failure.
    expect(named.length).toBeGreaterThan(20)
    const unknown: string[] = []
    for (const [, path, names] of named) {
      const source = fold(readFileSync(join(dirname(DOC), path!), 'utf8'))
      for (const [, name] of names!.matchAll(/“([^”]+)”/g)) {
        const parts = name!.split('%s').map((p) => fold(p.split('…')[0]!).trim())
        if (!parts.every((p) => source.includes(p))) unknown.push(`${path}: ${name}`)
      }
    }
    expect(unknown).toEqual([])
  })

  it('ends with the findings of the security review, each with a test against real processes', () => {
    const at = text.indexOf('\n## Findings of the security review')
    expect(at).toBeGreaterThan(0)
    // The last section of the file.
    expect(text.slice(at + 1).includes('\n## ')).toBe(false)
    const rows = text
      .slice(at)
      .split('\n')
      .filter((l) => /^\| \d+ \|/.test(l))
    expect(rows.length).toBeGreaterThanOrEqual(17)
    const withoutE2e = rows.filter((r) => !/\(\.\.\/packages\/cli\/test\/[\w-]+\.e2e\.test\.ts\) ›/.test(r)).map((r) => r.slice(0, 60))
    expect(withoutE2e).toEqual([])
  })
})
