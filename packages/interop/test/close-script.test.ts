/**
 * Regression (issue 21): embedded as the README shows, `await interop.close()` must resolve in a
 * script with nothing else on Node's event loop (an ESM script used to exit 13, a CommonJS one
 * early, skipping the code after `close()`). Real scripts in child processes against the BUILT
 * package (`npm run build` first), with the default read window and a data directory (the durable dedupe journal open, its brownout sentinel and audit sink tasks running).
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCloseScript } from '@ron/core/testing'

const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const script = { entry, imports: ['createInteropService'], create: 'const svc = await createInteropService({ dataDir: DATA })' }

describe('close() in a script with nothing else on the event loop (built package)', () => {
  it('runs against the built package', () => {
    expect(existsSync(entry), `${entry} is missing: run npm run build first`).toBe(true)
  })

  for (const format of ['esm', 'commonjs'] as const) {
    it(`${format}: the code after close() runs and the process exits 0`, async () => {
      const r = await runCloseScript({ ...script, format })
      expect(r.stderr).toBe('')
      expect(r.stdout).toBe('ready true\nafter close false\n')
      expect(r.code).toBe(0)
    })
  }
})
