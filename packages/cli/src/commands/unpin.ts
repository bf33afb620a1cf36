/**
 * `ron-node unpin`: release a pin (the work: `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node unpin <address>`. */
export const unpin = defineCommand<Common & { address: string }>({
  command: 'unpin <address>',
  describe: 'release a pin (scope storage:write)',
  builder: (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 unpin b3:…', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).pinCommand({ ...common(a), address: a.address, unpin: true }, io.stdout)
  },
})
