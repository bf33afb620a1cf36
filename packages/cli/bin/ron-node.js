#!/usr/bin/env node
// The `ron-node` executable as npm links it. It is committed (not generated), so `npm ci` in a
// fresh clone links a binary that exists. It runs the build (`dist/bin.js`); in a clone that has
// not been built yet it runs the TypeScript sources through tsx (a dev dependency), so `--help`
// works at once, and a command that needs the built packages says to run `npm run build`.
import { existsSync } from 'node:fs'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const built = new URL('../dist/bin.js', import.meta.url)
const source = new URL('../src/bin.ts', import.meta.url)
const missing = () => {
  process.stderr.write(
    `ron-node: the build is missing (${fileURLToPath(built)}).\n` +
      'ron-node: run `npm run build` in the repository root (or `npm start`, which builds first), then try again.\n',
  )
  process.exit(1)
}
if (existsSync(fileURLToPath(built))) {
  await import(built.href)
} else if (existsSync(fileURLToPath(source))) {
  let register
  try {
    ;({ register } = await import('tsx/esm/api'))
  } catch {
    missing()
  }
  register()
  await import(source.href)
} else {
  missing()
}
