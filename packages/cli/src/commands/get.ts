/**
 * `ron-node get`: fetch an object, verified (the work: `actions/get.ts`, client code only).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { CLIENT_OPTIONS, unSentinel, type ClientFlags } from './options.js'

/** `ron-node get <address>`. */
export const get = defineCommand<ClientFlags & { address: string; output?: string }>({
  command: 'get <address>',
  describe: 'fetch an object by address, verified, to a file (-o) or stdout',
  builder: (y) =>
    y
      .positional('address', { type: 'string', describe: 'b3: address', demandOption: true })
      .options(CLIENT_OPTIONS)
      .option('output', { alias: 'o', type: 'string', describe: 'output file, written atomically once verified [default: stdout]', requiresArg: true })
      .example('$0 get b3:… -o photo.jpg', 'verified, then renamed into place')
      .example('$0 get b3:… | sha256sum', 'to stdout')
      .epilog(EXIT_CODES_HELP),
  handler: async (f, io) => {
    const { getCommand } = await import('../actions/get.js')
    await getCommand({ address: f.address, output: unSentinel(f.output), node: f.node, token: f.token, dataDir: f.dataDir, progress: f.progress }, io.stdout)
  },
})
