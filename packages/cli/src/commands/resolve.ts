/**
 * `ron-node resolve`: a name or an address to its providers (the work: `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node resolve <key>`. */
export const resolve = defineCommand<Common & { key: string }>({
  command: 'resolve <key>',
  describe: 'resolve a name to its manifest and providers, or an address to its providers',
  builder: (c) => c.positional('key', { type: 'string', demandOption: true }).options(COMMON).example('$0 resolve docs.alice', '').example('$0 resolve b3:… --json', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).resolveCommand({ ...common(a), key: a.key }, io.stdout)
  },
})
