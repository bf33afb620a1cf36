/**
 * Regression (issue 21): embedded as the README shows, `await registry.close()` must resolve in a
 * script with nothing else on Node's event loop. Before, the drain waited on unref'd timers only:
 * an ESM script exited with code 13 (unsettled top-level await) and a CommonJS one exited early,
 * skipping the code after `close()`. Runs real scripts in child processes against the BUILT
 * package (`npm run build` first), with the default read window and a segment-file log in a data directory.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { tempDir, type TempDir } from '@ron/core/testing'

const run = promisify(execFile)
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url))

const dirs: TempDir[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await d.cleanup()
})

async function script(name: string, text: string): Promise<{ file: string; data: string }> {
  const tmp = await tempDir('ron-close-script-')
  dirs.push(tmp)
  const file = join(tmp.dir, name)
  await writeFile(file, text)
  return { file, data: join(tmp.dir, 'data') }
}

async function exec(file: string, data: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [file, data], { timeout: 30_000 })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string }
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }
  }
}

describe('close() in a script with nothing else on the event loop (built package)', () => {
  it('runs against the built package', () => {
    expect(existsSync(dist), `${dist} is missing: run npm run build first`).toBe(true)
  })

  it('ESM: the code after close() runs and the process exits 0', async () => {
    const { file, data } = await script(
      'close.mjs',
      [
        `import { createRegistryService, initRegistrySigner } from ${JSON.stringify(pathToFileURL(dist).href)}`,
        `const { signers } = await initRegistrySigner(process.argv[2], 'node-a')`,
        `const registry = await createRegistryService({ dataDir: process.argv[2], signers })`,
        `console.log('ready', registry.health().ready)`,
        `await registry.close()`,
        `console.log('after close', registry.health().ready)`,
      ].join('\n'),
    )
    const r = await exec(file, data)
    expect(r.stderr).toBe('')
    expect(r.stdout).toBe('ready true\nafter close false\n')
    expect(r.code).toBe(0)
  })

  it('CommonJS: the code after close() runs and the process exits 0', async () => {
    const { file, data } = await script(
      'close.cjs',
      [
        `const { createRegistryService, initRegistrySigner } = require(${JSON.stringify(dist)})`,
        `;(async () => {`,
        `  const { signers } = await initRegistrySigner(process.argv[2], 'node-a')`,
        `  const registry = await createRegistryService({ dataDir: process.argv[2], signers })`,
        `  await registry.close()`,
        `  console.log('after close')`,
        `})().catch((e) => { console.error(e); process.exitCode = 1 })`,
      ].join('\n'),
    )
    const r = await exec(file, data)
    expect(r.stdout).toBe('after close\n')
    expect(r.code).toBe(0)
  })
})
