import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import * as core from '@ron/core'
import * as passport from '../src/index.js'

// The exported names are checked by the API report (packages/passport/api-report.md) and the
// conformance suite's surface check; these tests hold the README to the code.
describe('public surface', () => {
  it('the README error catalog names real @ron/core error classes', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Errors'))
    const names = [...section.matchAll(/`([A-Z][A-Za-z]+Error)`/g)].map((m) => m[1]!)
    expect(names.length).toBeGreaterThanOrEqual(6)
    for (const name of names) {
      const Cls = (core as unknown as Record<string, new () => core.RonError>)[name]
      expect(Cls, name).toBeTypeOf('function')
      expect(`${new Cls!().code}Error`).toBe(name)
    }
  })

  it('the README lists every metric passport registers', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const svc = await passport.createPassportService({})
    try {
      const names = new Set([...(await svc.metricsText()).matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!))
      for (const n of names) expect(readme, n).toContain(`\`${n}`)
    } finally {
      await svc.close()
    }
  })
})
