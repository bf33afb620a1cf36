import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {"index": "src/index.ts"},
  format: ['esm'],
  dts: { compilerOptions: { composite: false } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
})
