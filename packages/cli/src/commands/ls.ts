/**
 * `ron-node ls`: the objects and pins on the node (the work: `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node ls`. */
export const ls = defineCommand<Common & { limit?: number; cursor?: string }>({
  command: 'ls',
  describe: 'list objects and pins on the node (scope storage:admin)',
  builder: (c) =>
    c
      .options(COMMON)
      .option('limit', { type: 'number', describe: 'page size [default: 100]', requiresArg: true })
      .option('cursor', { type: 'string', describe: 'continue after this address', requiresArg: true })
      .example('$0 ls --limit 20', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).lsCommand({ ...common(a), limit: a.limit, cursor: a.cursor }, io.stdout)
  },
})
