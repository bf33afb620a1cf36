/**
 * `ron-node pin`: keep an object (the work: `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node pin <address>`. */
export const pin = defineCommand<Common & { address: string }>({
  command: 'pin <address>',
  describe: 'keep an object (repair never lets its copies drop) (scope storage:write)',
  builder: (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 pin b3:…', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).pinCommand({ ...common(a), address: a.address }, io.stdout)
  },
})
