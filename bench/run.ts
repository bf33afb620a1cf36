/**
 * The entry of the benchmarks. `npm run bench` (quick, about two minutes: the out-of-process host
 * and storage suites) and `npm run bench -- --full` (every suite, longer rounds, 1 GiB objects,
 * soak). Pass names to run a subset, each a prefix of a suite's name or a folder:
 * `npx tsx bench/run.ts storage`, `npx tsx bench/run.ts --full hash kit`, `npx tsx bench/run.ts micro`.
 *
 * Suites are the `*.bench.ts` modules of `system/` (servers out of process) and `micro/` (pure
 * CPU, in process), each exporting `run()`. Every suite run writes its results to
 * `bench/results/<date>-<commit>-<suite>.json` and `.md` (see `lib/results.ts`).
 */
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { FULL } from './lib/harness.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH, SERVER_YOUNG_GROWTH } from './lib/process.js'
import { currentCommit, machine, recordSuite, type RunInfo } from './lib/results.js'

/** Suites of the quick run: the system benchmarks of the host and of storage. */
const QUICK = ['http', 'storage']
const FOLDERS = ['system', 'micro']

const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  console.log('usage: npx tsx bench/run.ts [--full] [suite-prefix | system | micro ...]')
  for (const f of FOLDERS) console.log(`${f}: ${suitesIn(f).map((s) => s.name).join(', ')}`)
  process.exit(0)
}

function suitesIn(folder: string): Array<{ name: string; folder: string; file: string }> {
  return readdirSync(fileURLToPath(new URL(`./${folder}/`, import.meta.url)))
    .filter((f) => f.endsWith('.bench.ts'))
    .sort()
    .map((file) => ({ name: file.slice(0, -'.bench.ts'.length), folder, file }))
}

const only = args.filter((a) => !a.startsWith('--'))
const all = FOLDERS.flatMap(suitesIn)
const suites = all.filter((s) =>
  only.length > 0 ? only.some((o) => o === s.folder || s.name.startsWith(o) || `${s.folder}/${s.name}`.startsWith(o)) : FULL || QUICK.includes(s.name),
)
if (only.length > 0 && suites.length === 0) {
  console.error(`no suite matches ${only.join(' ')}; suites: ${all.map((s) => `${s.folder}/${s.name}`).join(', ')}`)
  process.exit(2)
}

const info: Omit<RunInfo, 'startedAt'> = {
  commit: currentCommit(),
  node: process.version,
  code: SERVER_CODE,
  mode: FULL ? 'full' : 'quick',
  heapGrowth: SERVER_HEAP_GROWTH,
  youngGrowth: SERVER_YOUNG_GROWTH,
  machine: machine(),
}

console.log(`# RON benchmarks (${FULL ? 'full' : 'quick'}), node ${process.version}, commit ${info.commit}, ${new Date().toISOString()}`)
console.log(
  SERVER_CODE === 'dist'
    ? '# servers run the built packages (dist), as users do'
    : '# servers run the TypeScript sources through tsx (dist missing or older than src, or RON_BENCH_SOURCES=1): slower than what users run; `npm run build` first',
)
console.log(
  SERVER_HEAP_GROWTH === 'auto'
    ? "# server processes size their heaps on V8's own estimate (RON_BENCH_V8_HEAP=auto), not on ron-node's setting"
    : `# every server process, baselines included, runs with ron-node's heap settings: V8 growing factor ${SERVER_HEAP_GROWTH}, young generation growth ${SERVER_YOUNG_GROWTH} (RON_BENCH_V8_HEAP=auto for V8's own)`,
)
for (const s of suites) {
  const mod = (await import(`./${s.folder}/${s.file}`)) as { run: () => Promise<void> }
  console.log(`\n# ${s.folder}/${s.file}`)
  const written = await recordSuite({ ...info, startedAt: new Date().toISOString() }, s.name, `${s.folder}/${s.file}`, () => mod.run())
  console.log(`\n(${s.folder}/${s.file}: results in ${written.md} and .json)`)
}
