/**
 * Regression (issue 21): embedded as the README shows, `await index.close()` must resolve in a
 * script with nothing else on Node's event loop (an ESM script used to exit 13, a CommonJS one
 * early, skipping the code after `close()`). Real scripts in child processes against the BUILT
 * package (`npm run build` first), with the default read window and an LMDB name store in a data directory.
 */
import { fileURLToPath } from 'node:url'
import { describe, it } from 'vitest'
import { closeScriptChecks } from '@ron/core/testing'

const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const script = { entry, imports: ['createIndexService'], create: "const svc = await createIndexService({ dataDir: DATA }); console.log('durable', svc.durable)" }

describe('close() in a script with nothing else on the event loop (built package)', () => {
  for (const check of closeScriptChecks({ ...script, printsFirst: 'durable true\n' })) it(check.name, () => check.run())
})
