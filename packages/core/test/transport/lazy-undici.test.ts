import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const src = fileURLToPath(new URL('../../src', import.meta.url))

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []))
}

describe('cold start', () => {
  it('no module of @ron/core imports undici at load time (HttpTransport loads it on its first request; type imports are fine)', () => {
    const offenders = files(src).filter((f) => /^\s*import\s+(?!type\b)[^'"]*from\s+['"]undici['"]/m.test(readFileSync(f, 'utf8')) || /^\s*export\s+(?!type\b)[^'"]*from\s+['"]undici['"]/m.test(readFileSync(f, 'utf8')))
    expect(offenders).toEqual([])
  })
})
