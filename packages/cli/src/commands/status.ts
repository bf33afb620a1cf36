/**
 * `ron-node status`: a table of every service of the node (the work: `actions/status.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node status`. */
export const status = defineCommand<Common>({
  command: 'status',
  describe: 'a table of every service of the node: readiness, queues, uptime, peers',
  builder: (c) => c.options(COMMON).example('$0 status', '').example('$0 status --node http://10.0.0.2:7700 --json', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/status.js')).statusCommand(common(a), io.stdout)
  },
})
