import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Plugin } from 'esbuild'
import { defineConfig } from 'tsup'

/**
 * The `ron-node` executable (`dist/bin.js`), built after the library (`tsup.config.ts`) as one
 * bundle of the CLI, the `@ron/*` packages (their built `dist/`) and the pure-ESM packages below:
 * `ron-node start` used to load ~240 module files (95 of them zod's) before its first service, and
 * resolving, reading and linking them was a fifth of its start-up. The library entry
 * (`dist/index.js`, what embedders import) and the published `@ron/*` packages are unchanged.
 *
 * Every `@ron/*` module the executable runs comes from this bundle (one copy: `instanceof` holds
 * between them); everything not listed in {@link BUNDLED} stays an import resolved at run time
 * (native addons, CommonJS packages with worker files such as pino, undici, prom-client): those are
 * dependencies of `ron-node` itself so they resolve from `dist/` in an installed package too.
 */
const BUNDLED = [
  /^@ron\//,
  /^zod(\/|$)/,
  /^@noble\/hashes(\/|$)/,
  /^eventsource-parser(\/|$)/,
  // yargs and what it imports (all ESM).
  /^yargs(\/|$)/,
  /^yargs-parser(\/|$)/,
  /^cliui$/,
  /^string-width$/,
  /^strip-ansi$/,
  /^wrap-ansi$/,
  /^ansi-regex$/,
  /^ansi-styles$/,
  /^emoji-regex$/,
  /^get-east-asian-width$/,
  /^y18n$/,
  /^escalade(\/|$)/,
  /^get-caller-file$/,
  // pino and what it loads at import (CommonJS, ~25 files resolved one by one; see pinoTransportAtRunTime).
  /^pino$/,
  /^pino-std-serializers$/,
  /^@pinojs\/redact$/,
  /^safe-stable-stringify$/,
  /^quick-format-unescaped$/,
  /^sonic-boom$/,
  /^atomic-sleep$/,
  /^on-exit-leak-free$/,
]

/** Bare imports not in {@link BUNDLED} stay imports; node: builtins too. */
const externals: Plugin = {
  name: 'ron-externals',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (a) => {
      if (a.path.startsWith('node:') || !BUNDLED.some((re) => re.test(a.path))) return { path: a.path, external: true }
      return undefined
    })
  },
}

/**
 * yargs imports its help layout (cliui, string-width) at once, and string-width builds an
 * `Intl.Segmenter` and Unicode-property regexps as it loads (tens of ms, every command). Only
 * `--help` and usage errors lay out text: here yargs gets both through a stub that evaluates the real
 * module on its first call (esbuild initialises a module reached through `require()` lazily).
 */
const lazyHelpLayout: Plugin = {
  name: 'ron-lazy-help-layout',
  setup(build) {
    build.onResolve({ filter: /^(cliui|string-width)$/ }, (a) =>
      /[\\/]node_modules[\\/]yargs[\\/]/.test(a.importer) ? { path: a.path, namespace: 'ron-lazy', pluginData: dirname(a.importer) } : undefined,
    )
    build.onLoad({ filter: /.*/, namespace: 'ron-lazy' }, (a) => ({
      contents: `export default function lazy(...args) { return require(${JSON.stringify(a.path)}).default(...args) }\n`,
      // Resolved where yargs imported it from.
      resolveDir: a.pluginData as string,
      loader: 'js',
    }))
  },
}

/**
 * zod exports every locale it has (`z.locales`, `core.locales`: 60-odd error-message tables, 366 KB
 * of the bundle's 2.3 MB) and sets English as its default from its own import of `en.js`. Nothing
 * in RON picks another locale, and V8 scans all the code a module holds before it runs any of it,
 * so the bundle gets a locales index that holds English only (the same `en` zod's default uses);
 * asking it for another locale throws, naming this file.
 */
const englishOnlyZodLocales: Plugin = {
  name: 'ron-zod-locales',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (a) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/]/.test(a.importer) ? { path: join(dirname(a.importer), '..', 'locales', 'index.js'), namespace: 'ron-zod-locales' } : undefined,
    )
    build.onLoad({ filter: /.*/, namespace: 'ron-zod-locales' }, (a) => {
      const names = [...readFileSync(a.path, 'utf8').matchAll(/default as (\w+)\b/g)].map((m) => m[1]!)
      if (!names.includes('en')) throw new Error(`${a.path}: no English locale; update ron-zod-locales in tsup.bin.config.ts`)
      const others = names.filter((n) => n !== 'en')
      const contents = [
        'export { default as en } from "./en.js";',
        'const absent = (name) => () => { throw new Error(`zod locale ${name} is not in the ron-node bundle (packages/cli/tsup.bin.config.ts)`) };',
        ...others.map((n) => `export const ${n} = absent(${JSON.stringify(n)});`),
      ].join('\n')
      return { contents, resolveDir: dirname(a.path), loader: 'js' }
    })
  },
}

/**
 * pino is bundled (its ~25 CommonJS files cost ron-node start tens of ms to resolve and load one by
 * one), except two of its modules, which stay run-time requires of the installed pino: its
 * transport module (thread-stream and the worker file it finds next to itself, so it cannot live
 * in a bundle; ron-node writes with `pino.destination`, so it is now loaded only when someone asks
 * for a transport) and its symbols, which the bundled pino and that transport must share.
 */
const pinoTransportAtRunTime: Plugin = {
  name: 'ron-pino-transport',
  setup(build) {
    const inPino = (importer: string): boolean => /[\\/]node_modules[\\/]pino[\\/](lib[\\/])?[^\\/]+\.js$/.test(importer)
    build.onResolve({ filter: /^\.\.?\/(lib\/)?symbols$/ }, (a) => (inPino(a.importer) ? { path: 'pino/lib/symbols.js', external: true } : undefined))
    build.onResolve({ filter: /^\.\.?\/(lib\/)?transport$/ }, (a) => (inPino(a.importer) ? { path: 'pino-transport', namespace: 'ron-pino-transport' } : undefined))
    build.onLoad({ filter: /.*/, namespace: 'ron-pino-transport' }, () => ({
      contents: "module.exports = function transport(...args) { return require('pino/lib/transport.js')(...args) }\n",
      loader: 'js',
    }))
  },
}

/**
 * Each `@ron/*` package reads its version from `../package.json` next to its `dist/`; bundled, that
 * path would name this package's. The version is written in at build time instead.
 */
const ronVersions: Plugin = {
  name: 'ron-versions',
  setup(build) {
    build.onLoad({ filter: /[\\/]packages[\\/][a-z]+[\\/]dist[\\/].*\.js$/ }, (a) => {
      const text = readFileSync(a.path, 'utf8')
      const read = 'readFileSync(new URL("../package.json", import.meta.url), "utf8")'
      if (!text.includes(read)) {
        if (text.includes('"../package.json"')) throw new Error(`${a.path}: reads ../package.json in a way this build does not rewrite`)
        return undefined
      }
      const manifest = join(dirname(a.path), '..', 'package.json')
      const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }
      return { contents: text.split(read).join(JSON.stringify(JSON.stringify({ version }))), loader: 'js' }
    })
  },
}

/** One-unit ASCII stand-ins for the characters the sources' comments use most; anything else becomes `?`. */
const ASCII_STAND_INS: Record<string, string> = { '\u2192': '>', '\u2190': '<', '\u2014': '-', '\u2013': '-', '\u2026': '.', '\u00d7': 'x', '\u2264': '<', '\u2265': '>', '\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"', '\u00a7': 'S' }

/**
 * Makes every output file of this build pure ASCII. esbuild escapes non-ASCII characters in code
 * (its default `charset: 'ascii'`) but copies comments as they are, and the comments it keeps (in
 * expressions, zod's locale texts) hold `→`, `—`, `…`: one such character makes V8 hold the whole
 * file as a two-byte string, which Node's ES module loader decodes on TextDecoder's slow path and
 * V8 scans as UTF-16. In the 1 MB chunk of zod and core that cost ~10 ms of `ron-node start` on
 * the bench machine. Since code is already ASCII, what is left is in comments: each UTF-16 unit is
 * replaced by one ASCII character, so the source maps' columns still hold. A line or paragraph
 * separator (a line break in JavaScript) would end a `//` comment, so one is refused instead.
 */
function asciiOutputs(): void {
  const meta = JSON.parse(readFileSync('dist/metafile-esm.json', 'utf8')) as { outputs: Record<string, unknown> }
  for (const out of Object.keys(meta.outputs)) {
    if (!out.endsWith('.js')) continue
    const text = readFileSync(out, 'utf8')
    if (!/[^\x00-\x7f]/.test(text)) continue
    if (/[\u2028\u2029]/.test(text)) throw new Error(`${out}: a line or paragraph separator in the output; cannot make it ASCII safely`)
    writeFileSync(out, text.replace(/[^\x00-\x7f]/g, (c) => ASCII_STAND_INS[c] ?? '?'))
  }
}

export default defineConfig({
  entry: { bin: 'src/bin.ts' },
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: false,
  target: 'node20',
  platform: 'node',
  tsconfig: 'tsconfig.build.json',
  splitting: true,
  // dist/metafile-esm.json: which inputs each output file holds (the client-startup test reads it
  // to check which packages' code a command loads). Not published.
  metafile: true,
  // The plugins above decide what is bundled; tsup's own rule (dependencies external) would keep @ron/* out.
  noExternal: [/.*/],
  esbuildPlugins: [externals, lazyHelpLayout, englishOnlyZodLocales, pinoTransportAtRunTime, ronVersions],
  onSuccess: async () => asciiOutputs(),
  // A bundled CommonJS module's `require()` of an external or a builtin needs a real require.
  banner: { js: "import { createRequire as __ronCreateRequire } from 'node:module'; const require = __ronCreateRequire(import.meta.url);" },
})
