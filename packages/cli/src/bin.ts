#!/usr/bin/env node
/**
 * The `ron-node` executable.
 *
 * @module
 */

import { hideBin } from 'yargs/helpers'
import { runCli } from './cli.js'

// Library timers (retry backoff, deadlines) are unref'd; a ref'd handle keeps the process alive
// while a command runs, so it cannot exit mid-command with an unsettled top-level await.
const keepAlive = setInterval(() => {}, 1 << 30)
// A reader that goes away early (`ron-node get b3:… | head`) breaks stdout (EPIPE). Commands that
// stream to stdout handle it themselves; this keeps a late write error from crashing with a stack.
let finished: number | undefined = undefined
process.stdout.on('error', () => {
  if (finished !== undefined) process.exit(finished)
})
const code = await runCli(hideBin(process.argv))
finished = code
clearInterval(keepAlive)
// Long-lived handles (keep-alive sockets, stdin) must not keep a finished command alive.
process.stdout.write('', () => process.exit(code))
