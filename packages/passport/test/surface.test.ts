import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import * as core from '@ron/core'
import * as passport from '../src/index.js'

describe('public surface', () => {
  it('exports exactly these names (a change here is an API change)', () => {
    expect(Object.keys(passport).sort()).toEqual(
      [
        'CHANNELS',
        'PASSPORT_IMMUTABLE_KEYS',
        'PASSPORT_METRICS',
        'PASSPORT_RUNTIME_KEYS',
        'SERVICE_ID',
        'TASKS',
        'callerPolicySchema',
        'checkIssue',
        'createFileKeystore',
        'createMemoryKeystore',
        'createPassportClient',
        'createPassportService',
        'ensureAdminToken',
        'narrow',
        'narrowCaveats',
        'passportConfigSchema',
        'passportMinter',
        'passportTopology',
        'policySchema',
        'registrySyncSchema',
        'prefixWithin',
        'remotePassportMinter',
        'resolvePassportConfig',
        'rotateWithAdminToken',
        'servicePlan',
      ].sort(),
    )
  })

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
