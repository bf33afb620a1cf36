/**
 * The import-boundary rule of `eslint.config.js` (the layers of `@ron/core/src`), driven through
 * ESLint's Node API the way `npm run lint` runs it: an upward import inside core fails with the
 * layering message, a downward one passes, today's sources pass, and every folder and root file
 * of `src/` has a layer (a new folder must be placed in the order before it can be linted).
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ESLint } from 'eslint'
import { beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '@ron/core/testing'

const root = repoRoot()
const src = fileURLToPath(new URL('../../src/', import.meta.url))

let eslint: ESLint
let layers: string[][]

beforeAll(async () => {
  // Only the boundary rule, and no type information: the rule reads import strings, so the
  // type-aware parse `npm run lint` does (tens of seconds) is not needed here.
  eslint = new ESLint({
    cwd: root,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
    ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
  })
  const config = (await import(pathToFileURL(join(root, 'eslint.config.js')).href)) as { CORE_LAYERS: string[][] }
  layers = config.CORE_LAYERS
})

/** The `no-restricted-imports` messages of `code` linted as if it were `file` (relative to core/src). */
async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${src}${file}` })
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message)
}

describe('@ron/core layering (eslint no-restricted-imports)', () => {
  it.each([
    ['clock.ts', "import { waitUnlessAborted } from './concurrency/abort.js'", 'concurrency/'],
    ['errors.ts', "import type { Route } from './http/types.js'", 'http/'],
    ['health/readiness.ts', "import type { RonService } from '../service/types.js'", 'service/'],
    ['auth/sign.ts', "import type { Transport } from '../transport/types.js'", 'transport/'],
    ['auth/verifier.ts', "import { remoteKeySource } from '../auth-remote/index.js'", 'auth-remote/'],
    ['http/serve.ts', "import type { ListenerPolicy } from '../service/types.js'", 'service/'],
    ['hash/address.ts', "import { BoundedQueue } from '../concurrency/index.js'", 'concurrency/'],
    ['transport/http.ts', "import { Readiness } from '../health/index.js'", 'health/'],
    ['contracts.ts', "import { schemaError } from './dir-manifest.js'", 'dir-manifest.ts'],
    ['service/host.ts', "import { VirtualClock } from '../testing/virtual-clock.js'", 'testing/'],
  ])('%s importing upward (%s) is an error', async (file, code, target) => {
    const errors = await boundaryErrors(file, `${code}\nexport const used = [] as unknown[]\n`)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain(`@ron/core layering`)
    expect(errors[0]).toContain(`must not import ${target}`)
  })

  it.each([
    ['clock.ts', "import { waitUnlessAborted } from './abort.js'"],
    ['auth/sign.ts', "import { systemClock } from '../clock.js'"],
    ['auth-remote/revocation-feed.ts', "import type { Transport } from '../transport/types.js'"],
    ['service/host.ts', "import { createHttpHandler } from '../http/index.js'"],
    ['transport/memory.ts', "import type { RonRequest } from '../http/types.js'"],
    ['health/index.ts', "export { Readiness } from './readiness.js'"],
    ['testing/fixtures.ts', "import { createServiceHost } from '../service/host.js'"],
  ])('%s importing its own layer or below (%s) passes', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([])
  })

  it('every source file of core passes the rule today', async () => {
    const results = await eslint.lintFiles([`${src}**/*.ts`])
    expect(results.length).toBeGreaterThan(100)
    const errors = results.flatMap((r) => r.messages.map((m) => `${r.filePath.slice(src.length)}:${m.line} ${m.message}`))
    expect(errors).toEqual([])
  })

  it('every folder and root file of core/src has a layer', () => {
    const placed = new Set(layers.flat())
    const present = readdirSync(src, { withFileTypes: true }).map((d) => (d.isDirectory() ? `${d.name}/` : d.name))
    expect(present.filter((p) => !placed.has(p))).toEqual([])
    expect([...placed].filter((p) => !present.includes(p))).toEqual([])
  })
})
