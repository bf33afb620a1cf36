/**
 * `ron-node config print|validate` (the work: `actions/config.ts`).
 *
 * @module
 */

import { defineCommand, subcommands } from './command.js'
import { NODE_OPTIONS, nodeFlags, type NodeFlags } from './options.js'

const print = defineCommand<NodeFlags>({
  command: 'print',
  describe: 'print the effective config (defaults < file < RON_* env < flags), secrets redacted',
  builder: (c) => c.options(NODE_OPTIONS).example('$0 config print --config ron.toml', ''),
  handler: async (a, io) => {
    const { configPrintCommand } = await import('../actions/config.js')
    configPrintCommand({ config: a.config, flags: nodeFlags(a) }, io.stdout)
  },
})

const validate = defineCommand<NodeFlags>({
  command: 'validate',
  describe: 'check the config; exit 2 naming the bad key',
  builder: (c) => c.options(NODE_OPTIONS).example('$0 config validate --config ron.toml', ''),
  handler: async (a, io) => {
    const { configValidateCommand } = await import('../actions/config.js')
    configValidateCommand({ config: a.config, flags: nodeFlags(a) }, io.stdout)
  },
})

/** `ron-node config`. */
export const config = defineCommand({
  command: 'config',
  describe: 'print or validate the effective configuration',
  builder: (y, io) => subcommands(y, io, [print, validate], 'say which: config print or config validate'),
})
