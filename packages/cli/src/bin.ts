#!/usr/bin/env node
/**
 * The `ron-node` executable.
 *
 * @module
 */

import { hideBin } from 'yargs/helpers'
import { runCli } from './cli.js'

const code = await runCli(hideBin(process.argv))
// Long-lived handles (keep-alive sockets, stdin) must not keep a finished command alive.
process.stdout.write('', () => process.exit(code))
