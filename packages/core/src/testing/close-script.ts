/**
 * The "close() in a bare script" check of the service contract (SPEC §3.3): embedded as a
 * README shows, `await service.close()` must resolve in a script with nothing else on Node's
 * event loop — an ESM script whose top-level await never settles exits 13, a CommonJS one exits
 * early and skips the code after `close()`.
 *
 * @module
 */

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { tempDir } from './fixtures.js'

const run = promisify(execFile)

/** What {@link runCloseScript} runs. */
export interface CloseScriptOptions {
  /** Absolute path of the built package entry (its `dist/index.js`). */
  entry: string
  /** The names the script takes from the entry. */
  imports: readonly string[]
  /**
   * Statements that create the service as `svc` (they may print lines of their own first);
   * `DATA` is a fresh data directory's path.
   */
  create: string
  /** The script's module format. */
  format: 'esm' | 'commonjs'
  /** Kill the script after this long. @default 30_000 */
  timeoutMs?: number
}

/** How a {@link runCloseScript} script ended. */
export interface CloseScriptResult {
  /** Exit code (`-1` when killed). */
  code: number
  stdout: string
  stderr: string
}

/**
 * Writes a script that creates a service from a built package, prints `ready <health().ready>`,
 * awaits `close()` and prints `after close <health().ready>`, runs it in a child Node process
 * and removes its directory. A service that passes prints `ready true\nafter close false\n` and
 * exits 0.
 */
export async function runCloseScript(options: CloseScriptOptions): Promise<CloseScriptResult> {
  const tmp = await tempDir('ron-close-script-')
  try {
    const esm = options.format === 'esm'
    const file = join(tmp.dir, esm ? 'close.mjs' : 'close.cjs')
    const names = options.imports.join(', ')
    const body = [
      `const DATA = process.argv[2]`,
      options.create,
      `console.log('ready', svc.health().ready)`,
      `await svc.close()`,
      `console.log('after close', svc.health().ready)`,
    ]
    const text = esm
      ? [`import { ${names} } from ${JSON.stringify(pathToFileURL(options.entry).href)}`, ...body]
      : [
          `const { ${names} } = require(${JSON.stringify(options.entry)})`,
          `;(async () => {`,
          ...body,
          `})().catch((e) => { console.error(e); process.exitCode = 1 })`,
        ]
    await writeFile(file, text.join('\n'))
    try {
      const r = await run(process.execPath, [file, join(tmp.dir, 'data')], { timeout: options.timeoutMs ?? 30_000 })
      return { code: 0, stdout: r.stdout, stderr: r.stderr }
    } catch (e) {
      const err = e as { code?: unknown; stdout?: string; stderr?: string }
      return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }
    }
  } finally {
    await tmp.cleanup()
  }
}

/** What {@link closeScriptChecks} checks: {@link CloseScriptOptions} without the format. */
export interface CloseScriptCheckOptions extends Omit<CloseScriptOptions, 'format'> {
  /** Lines the `create` statements print before `ready …` (each ending in `\n`). @default '' */
  printsFirst?: string
}

/** One check of {@link closeScriptChecks}: register it as `it(check.name, () => check.run())`. */
export interface CloseScriptCheck {
  name: string
  run(): Promise<void>
}

/**
 * The "close() in a bare script" checks a service package runs against its built entry: the
 * entry exists (`npm run build` first), then, as ESM and as CommonJS, the code after `close()`
 * runs, nothing goes to stderr and the process exits 0.
 *
 * @example
 * ```ts
 * for (const check of closeScriptChecks({ entry, imports: ['createStorageService'], create: 'const svc = await createStorageService()' }))
 *   it(check.name, () => check.run())
 * ```
 */
export function closeScriptChecks(options: CloseScriptCheckOptions): CloseScriptCheck[] {
  const { printsFirst = '', ...script } = options
  const checks: CloseScriptCheck[] = [
    {
      name: 'runs against the built package',
      run: () => {
        assert.ok(existsSync(script.entry), `${script.entry} is missing: run npm run build first`)
        return Promise.resolve()
      },
    },
  ]
  for (const format of ['esm', 'commonjs'] as const) {
    checks.push({
      name: `${format}: the code after close() runs and the process exits 0`,
      run: async () => {
        const r = await runCloseScript({ ...script, format })
        assert.equal(r.stderr, '')
        assert.equal(r.stdout, `${printsFirst}ready true\nafter close false\n`)
        assert.equal(r.code, 0)
      },
    })
  }
  return checks
}
