import { defineConfig, type Options } from 'tsup'

/** The one tsup setup every package uses: ESM + declarations for Node 20, sourcemaps, clean dist. */
export function packageConfig(entry: Record<string, string>, extra: Options = {}): ReturnType<typeof defineConfig> {
  return defineConfig({
    entry,
    format: ['esm'],
    dts: { compilerOptions: { composite: false } },
    sourcemap: true,
    clean: true,
    target: 'node20',
    tsconfig: 'tsconfig.build.json',
    ...extra,
  })
}
