/**
 * `ron-node keys rotate`: the issuer keys (the work: `actions/tokens.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, type Common } from './options.js'

const rotate = defineCommand<Common>({
  command: 'rotate',
  describe: 'publish the next issuer key; the previous one stays verify-only (scope passport:admin)',
  builder: (k) => k.options(COMMON).example('$0 keys rotate', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/tokens.js')).keysRotateCommand(common(a), io.stdout)
  },
})

/** `ron-node keys`. */
export const keys = defineCommand({
  command: 'keys',
  describe: 'issuer keys',
  builder: (y, io) => subcommands(y, io, [rotate], 'say which: keys rotate'),
})
