import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'

const src = (p: string): string => fileURLToPath(new URL(`./packages/${p}`, import.meta.url))

/** Test files of the service packages that need a fresh worker: they mock modules (vi.mock) or stub the environment. */
const ISOLATED = [
  'packages/core/test/config/load.test.ts',
  'packages/core/test/hash/backend-fallback.test.ts',
  'packages/index/test/disk-fault-injected.test.ts',
  'packages/index/test/store-chains.test.ts',
  // Failed once in a shared worker (passes alone); isolated until the leak is found.
  'packages/index/test/lying-peer.e2e.test.ts',
  'packages/index/test/store-durability.test.ts',
  'packages/interop/test/api-key.test.ts',
  'packages/passport/test/disk-faults.test.ts',
  'packages/passport/test/jsonl-file.test.ts',
  'packages/registry/test/write-faults.test.ts',
  'packages/storage/test/store-races-and-pins.test.ts',
  'packages/storage/test/store/fs-format-faults.test.ts',
]

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@ron\/core\/testing$/, replacement: src('core/src/testing/index.ts') },
      { find: /^@ron\/core\/client$/, replacement: src('core/src/client.ts') },
      { find: /^@ron\/core\/base$/, replacement: src('core/src/base.ts') },
      { find: /^@ron\/core\/hash$/, replacement: src('core/src/hash/index.ts') },
      { find: /^@ron\/core\/config$/, replacement: src('core/src/config/index.ts') },
      { find: /^@ron\/core\/metrics$/, replacement: src('core/src/metrics/index.ts') },
      { find: /^@ron\/core\/concurrency$/, replacement: src('core/src/concurrency/index.ts') },
      { find: /^@ron\/core\/resilience$/, replacement: src('core/src/resilience/index.ts') },
      { find: /^@ron\/core\/auth$/, replacement: src('core/src/auth/index.ts') },
      { find: /^@ron\/core\/http$/, replacement: src('core/src/http/index.ts') },
      { find: /^@ron\/core\/transport$/, replacement: src('core/src/transport/index.ts') },
      { find: /^@ron\/core\/auth-remote$/, replacement: src('core/src/auth-remote/index.ts') },
      { find: /^@ron\/core\/health$/, replacement: src('core/src/health/index.ts') },
      { find: /^@ron\/core\/service$/, replacement: src('core/src/service/index.ts') },
      { find: /^@ron\/core$/, replacement: src('core/src/index.ts') },
      { find: /^@ron\/storage\/testing$/, replacement: src('storage/src/testing.ts') },
      { find: /^@ron\/storage\/client$/, replacement: src('storage/src/client.ts') },
      { find: /^@ron\/storage$/, replacement: src('storage/src/index.ts') },
      { find: /^@ron\/registry$/, replacement: src('registry/src/index.ts') },
      { find: /^@ron\/passport$/, replacement: src('passport/src/index.ts') },
      { find: /^@ron\/index$/, replacement: src('index/src/index.ts') },
      { find: /^@ron\/interop$/, replacement: src('interop/src/index.ts') },
    ],
  },
  test: {
    // Which files run is said by the two projects below (together: packages/*/test, examples, docs).
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at a time. Vitest's default is one worker per core minus one, which on the 2-core
    // CI runner is a single worker: the suite ran file after file while most e2e files sat waiting
    // on the ron-node processes they spawn.
    maxWorkers: 2,
    // The service packages' own tests run in-process and clean up after themselves: they share a
    // worker and its loaded modules (no fresh process and no re-import of @ron/core's sources per
    // file, which cost more than the tests themselves). The CLI's tests, the examples and docs,
    // and the few files that mock modules or stub the environment keep a fresh worker per file.
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['packages/{core,storage,registry,passport,index,interop}/test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ISOLATED],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['packages/cli/test/**/*.test.ts', 'examples/**/*.test.ts', 'docs/**/*.test.ts', ...ISOLATED],
        },
      },
    ],
    reporters: ['default'],
    // On with --coverage (`npm test`). V8 coverage is taken in each test worker through the
    // inspector, not NODE_V8_COVERAGE, so the processes tests spawn (ron-node, clusters, Go)
    // run uninstrumented; what they execute is dist/, which no source map here counts.
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts'],
      exclude: ['**/*.d.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
      // A failing test still reports coverage (CI prints the table either way).
      reportOnFailure: true,
      // A floor per package (its src/ files summed): the level measured when the floors were
      // set (2026-11, 1503 tests) minus 2 points, so run-to-run jitter in timing-dependent
      // branches does not fail CI. Raise a floor when a package's coverage rises for good.
      // ron-node is mostly exercised through its spawned binary, which coverage cannot see; its
      // floor counts the in-process tests (startNode, runCli, the etcd stores on a real etcd):
      // 75.0 / 69.9 / 74.2 / 55.8 measured 2026-11-27 (lines/statements/functions/branches).
      thresholds: {
        'packages/core/src/**': { lines: 94, statements: 93, functions: 92, branches: 88 },
        'packages/storage/src/**': { lines: 94, statements: 91, functions: 89, branches: 83 },
        'packages/registry/src/**': { lines: 91, statements: 86, functions: 90, branches: 76 },
        'packages/passport/src/**': { lines: 94, statements: 90, functions: 90, branches: 82 },
        'packages/index/src/**': { lines: 92, statements: 90, functions: 93, branches: 82 },
        'packages/interop/src/**': { lines: 94, statements: 91, functions: 90, branches: 84 },
        'packages/cli/src/**': { lines: 73, statements: 67, functions: 72, branches: 53 },
      },
    },
  },
})
