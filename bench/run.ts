/**
 * `npm run bench` (quick, about a minute: the out-of-process host and storage benchmarks) and
 * `npm run bench -- --full` (every module, longer rounds, 1 GiB objects, soak). Pass names to run
 * a subset: `npx tsx bench/run.ts storage`, `npx tsx bench/run.ts --full hash kit`.
 */
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { FULL } from './harness.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH } from './process.js'

/** Modules of the quick run: the system benchmarks, servers out of process. */
const QUICK = ['http', 'storage']

const dir = fileURLToPath(new URL('.', import.meta.url))
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const modules = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => (only.length > 0 ? only.some((o) => f.startsWith(o)) : FULL || QUICK.some((q) => f.startsWith(`${q}.`))))
  .sort()

console.log(`# RON benchmarks (${FULL ? 'full' : 'quick'}), node ${process.version}, ${new Date().toISOString()}`)
console.log(
  SERVER_CODE === 'dist'
    ? '# servers run the built packages (dist), as users do'
    : '# servers run the TypeScript sources through tsx (dist missing or older than src, or RON_BENCH_SOURCES=1): slower than what users run; `npm run build` first',
)
console.log(
  SERVER_HEAP_GROWTH === 'auto'
    ? "# server processes size their heaps on V8's own estimate (RON_BENCH_V8_HEAP=auto), not on ron-node's setting"
    : `# every server process, baselines included, runs with ron-node's heap setting: V8 growing factor ${SERVER_HEAP_GROWTH} (RON_BENCH_V8_HEAP=auto for V8's own)`,
)
for (const file of modules) {
  const mod = (await import(`./${file}`)) as { run: () => Promise<void> }
  const t0 = performance.now()
  console.log(`\n# ${file}`)
  await mod.run()
  console.log(`\n(${file}: ${((performance.now() - t0) / 1000).toFixed(1)} s)`)
}
