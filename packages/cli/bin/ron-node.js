#!/usr/bin/env node
// The `ron-node` executable as npm links it. It is committed (not generated), so `npm ci` in a
// fresh clone links a binary that exists. It runs the build (`dist/bin.js`), imported at once (no
// file check first: the import is the check); in a clone that has not been built yet it runs the
// TypeScript sources through tsx (a dev dependency), so `--help` works at once, and a command that
// needs the built packages says to run `npm run build`.
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const built = new URL('../dist/bin.js', import.meta.url)
const source = new URL('../src/bin.ts', import.meta.url)
/**
 * @param {string} what
 * @returns {never}
 */
const missing = (what) => {
  process.stderr.write(
    `ron-node: the build is missing (${what}).\n` +
      'ron-node: run `npm run build` in the repository root (or `npm start`, which builds what changed first), then try again.\n',
  )
  process.exit(1)
}
/**
 * True when `e` says the module at `url` itself (not one it imports) does not exist.
 * @param {unknown} e
 * @param {URL} url
 */
// (Node quotes the missing module; the importer follows unquoted: "imported from /…/bin.js".)
const notFound = (e, url) => codeOf(e) === 'ERR_MODULE_NOT_FOUND' && messageOf(e).includes(`'${fileURLToPath(url)}'`)
/** @param {unknown} e */
const codeOf = (e) => (e instanceof Error && 'code' in e ? e.code : undefined)
/** @param {unknown} e */
const messageOf = (e) => (e instanceof Error ? e.message : String(e))

// First, before the services load (they would grow V8's semi-spaces to 8 MiB while loading):
// ron-node's default young-generation growth factor. `start` applies its config's
// `youngGenGrowth` again. See setYoungGenerationGrowth in @ron/core.
try {
  // Typed here: in a clone not built yet, @ron/core has no declarations for lint to read.
  /** @type {unknown} */
  const base = await import('@ron/core/base')
  const { SERVER_YOUNG_GENERATION_GROWTH, setYoungGenerationGrowth } = /** @type {{ SERVER_YOUNG_GENERATION_GROWTH: number, setYoungGenerationGrowth: (factor: number) => void }} */ (base)
  setYoungGenerationGrowth(SERVER_YOUNG_GENERATION_GROWTH)
} catch (e) {
  // An unbuilt clone: the import below says what to do.
  if (codeOf(e) !== 'ERR_MODULE_NOT_FOUND') throw e
}

try {
  await import(built.href)
} catch (e) {
  if (codeOf(e) !== 'ERR_MODULE_NOT_FOUND') throw e
  // A package the build imports is not built (e.g. packages/core/dist): say so.
  if (!notFound(e, built)) missing(messageOf(e).split('\n')[0] ?? '')
  let register
  try {
    ;({ register } = await import('tsx/esm/api'))
  } catch {
    missing(fileURLToPath(built))
  }
  register()
  try {
    await import(source.href)
  } catch (e2) {
    if (notFound(e2, source)) missing(fileURLToPath(built))
    throw e2
  }
}
