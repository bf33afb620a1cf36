/**
 * `ron-node stat`: an object's size, pins, integrity, placement and repair state (the work:
 * `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node stat <address>`. */
export const stat = defineCommand<Common & { address: string }>({
  command: 'stat <address>',
  describe: 'size, pins, integrity, placement and repair state of an object',
  builder: (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 stat b3:…', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).statCommand({ ...common(a), address: a.address }, io.stdout)
  },
})
