/**
 * `ron-node receipt verify`: webhook receipts stored by interop (the work: `actions/registry.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, type Common } from './options.js'

const verify = defineCommand<Common & { address: string; secret?: string }>({
  command: 'verify <address>',
  describe: "re-verify a stored webhook receipt with the provider's secret (no replay window); exit 5 if it does not verify",
  builder: (w) =>
    w
      .positional('address', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('secret', { type: 'string', describe: "the provider secret [default: the node's, from <data-dir>/interop/webhook-secrets.json]", requiresArg: true })
      .example('$0 receipt verify b3:…', 'the receipt address printed by `webhook test` or returned in the 202')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).receiptVerifyCommand({ ...common(a), address: a.address, secret: a.secret }, io.stdout)
  },
})

/** `ron-node receipt`. */
export const receipt = defineCommand({
  command: 'receipt',
  describe: 'webhook receipts stored by interop',
  builder: (y, io) => subcommands(y, io, [verify], 'say which: receipt verify'),
})
