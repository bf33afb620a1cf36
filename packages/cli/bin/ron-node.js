#!/usr/bin/env node
// The `ron-node` executable as npm links it. It is committed (not generated), so `npm ci` in a
// fresh clone links a binary that exists; it loads the build, or says how to make one.
import { existsSync } from 'node:fs'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const built = new URL('../dist/bin.js', import.meta.url)
if (!existsSync(fileURLToPath(built))) {
  process.stderr.write(
    `ron-node: the build is missing (${fileURLToPath(built)}).\n` +
      'ron-node: run `npm run build` in the repository root (or `npm start`, which builds first), then try again.\n',
  )
  process.exit(1)
}
await import(built.href)
