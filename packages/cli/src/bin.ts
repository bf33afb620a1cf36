#!/usr/bin/env node
/**
 * The `ron-node` executable.
 *
 * @module
 */

import { setFlagsFromString } from 'node:v8'
import { hideBin } from 'yargs/helpers'
import { runCli } from './cli.js'

const args = hideBin(process.argv)
// A client command is a short-lived process: its HTTP client (undici) parses responses with llhttp
// compiled to WebAssembly, and V8 tiers that parser's one large function (~33 KB of wasm) up to
// TurboFan in the background after a few responses. That compile takes 250 ms to over a second of
// CPU, and the process cannot exit before it ends (Node joins V8's worker threads at exit), so
// every `put`/`get` used to wait for an optimisation it would never use. Liftoff's code is enough
// for the few responses a client command parses (a 256 MiB get costs the same CPU either way).
// `start` runs for a long time and keeps the optimising tier. Set before anything compiles wasm.
if (args.find((a) => !a.startsWith('-')) !== 'start') setFlagsFromString('--liftoff-only')

// Library timers (retry backoff, deadlines) are unref'd; a ref'd handle keeps the process alive
// while a command runs, so it cannot exit mid-command with an unsettled top-level await.
const keepAlive = setInterval(() => {}, 1 << 30)
// A reader that goes away early (`ron-node get b3:… | head`) breaks stdout (EPIPE). Commands that
// stream to stdout handle it themselves; this keeps a late write error from crashing with a stack.
let finished: number | undefined = undefined
process.stdout.on('error', () => {
  if (finished !== undefined) process.exit(finished)
})
const code = await runCli(args)
finished = code
clearInterval(keepAlive)
// Long-lived handles (keep-alive sockets, stdin) must not keep a finished command alive.
process.stdout.write('', () => process.exit(code))
