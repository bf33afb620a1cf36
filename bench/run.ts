/**
 * `npm run bench`: runs every benchmark module in `bench/` side by side with its baseline and
 * prints ratios. Pass names to run a subset: `npm run bench -- kit hash`.
 */
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('.', import.meta.url))
const only = process.argv.slice(2)
const modules = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort()

for (const file of modules) {
  const mod = (await import(`./${file}`)) as { run: () => Promise<void> }
  console.log(`\n# ${file}`)
  await mod.run()
}
