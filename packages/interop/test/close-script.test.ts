/**
 * Regression (issue 21): embedded as the README shows, `await interop.close()` must resolve in a
 * script with nothing else on Node's event loop (an ESM script used to exit 13, a CommonJS one
 * early, skipping the code after `close()`). Real scripts in child processes against the BUILT
 * package (`npm run build` first), with the default read window and a data directory (the durable dedupe journal open, its brownout sentinel and audit sink tasks running).
 */
import { fileURLToPath } from 'node:url'
import { describe, it } from 'vitest'
import { closeScriptChecks } from '@ron/core/testing'

const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const script = { entry, imports: ['createInteropService'], create: 'const svc = await createInteropService({ dataDir: DATA })' }

describe('close() in a script with nothing else on the event loop (built package)', () => {
  for (const check of closeScriptChecks(script)) it(check.name, () => check.run())
})
