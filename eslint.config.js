// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'


// The layers of @ron/core/src, lowest first: a file may import its own layer and the ones below,
// never one above (docs/ARCHITECTURE.md). Each layer is a list of folders (`http/`) and root
// files (`clock.ts`). `packages/core/test/layering.test.ts` checks that an upward import fails.
//   base files < hash, config, metrics, contracts < concurrency, resilience < auth (token crypto)
//   < http < transport < auth-remote (networked auth) < health < service < testing, entry files
// http sits below transport: the memory transport dispatches into an http handler, and nothing
// in http/ reaches a transport.
export const CORE_LAYERS = [
  ['errors.ts', 'clock.ts', 'abort.ts', 'random.ts', 'bytes.ts', 'heap.ts', 'metrics-sink.ts', 'disk-fault.ts', 'canonical-json.ts', 'media-types.ts', 'base.ts'],
  ['hash/', 'config/', 'metrics/', 'contracts.ts', 'gateway-label.ts'],
  ['concurrency/', 'resilience/'],
  ['auth/'],
  ['http/', 'dir-manifest.ts'],
  ['transport/'],
  ['auth-remote/'],
  ['health/'],
  ['service/'],
  ['testing/', 'index.ts', 'client.ts'],
]

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** One `no-restricted-imports` block per layer: the relative imports that reach a higher layer. */
function coreLayerRules() {
  const order = CORE_LAYERS.map((l) => l.join(' ')).join(' < ')
  const blocks = []
  CORE_LAYERS.forEach((layer, i) => {
    const above = CORE_LAYERS.slice(i + 1).flat()
    if (above.length === 0) return
    const pattern = (fromRoot) =>
      above.map((t) => {
        const up = fromRoot ? '\\./' : '\\.\\./'
        const re = t.endsWith('/') ? `^${up}${escapeRe(t)}` : `^${up}${escapeRe(t.replace(/\.ts$/, '.js'))}$`
        return { regex: re, message: `@ron/core layering: ${layer.join(', ')} must not import ${t} (a higher layer). Order: ${order}` }
      })
    const folders = layer.filter((t) => t.endsWith('/')).map((t) => `packages/core/src/${t}**`)
    const files = layer.filter((t) => !t.endsWith('/')).map((t) => `packages/core/src/${t}`)
    if (folders.length > 0) blocks.push({ files: folders, rules: { 'no-restricted-imports': ['error', { patterns: pattern(false) }] } })
    if (files.length > 0) blocks.push({ files, rules: { 'no-restricted-imports': ['error', { patterns: pattern(true) }] } })
  })
  return blocks
}

export default tseslint.config(
  { ignores: ['**/dist/**', 'docs/api/**', 'node_modules/**', '**/tsup.config.ts', '**/tsup.bin.config.ts', 'tsup.base.ts', 'eslint.config.js', 'vitest.config.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['packages/*/test/**', 'examples/**', 'bench/**', 'packages/cli/src/**'],
    rules: {
      'no-console': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Async generators standing in for streams often have nothing to await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  ...coreLayerRules(),
)
