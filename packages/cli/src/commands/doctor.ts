/**
 * `ron-node doctor`: check the node and its surroundings (the work: `actions/status.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node doctor`. */
export const doctor = defineCommand<Common>({
  command: 'doctor',
  describe: 'check the node, its data directory, key files, ports, disk, peers and clock skew; each finding says what to do',
  builder: (c) => c.options(COMMON).example('$0 doctor', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/status.js')).doctorCommand(common(a), io.stdout)
  },
})
