/**
 * `ron-node webhook test`: provider webhooks received by interop (the work: `actions/registry.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, type Common } from './options.js'

const test = defineCommand<Common & { provider: string; secret?: string }>({
  command: 'test <provider>',
  describe: "send a signed test delivery (github, slack, stripe, standard) with the node's secret for it",
  builder: (w) =>
    w
      .positional('provider', { type: 'string', demandOption: true, choices: ['github', 'slack', 'stripe', 'standard'] })
      .options(COMMON)
      .option('secret', { type: 'string', describe: "the provider secret [default: the node's, from <data-dir>/interop/webhook-secrets.json]", requiresArg: true })
      .example('$0 webhook test github', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).webhookTestCommand({ ...common(a), provider: a.provider, secret: a.secret }, io.stdout)
  },
})

/** `ron-node webhook`. */
export const webhook = defineCommand({
  command: 'webhook',
  describe: 'provider webhooks received by interop',
  builder: (y, io) => subcommands(y, io, [test], 'say which: webhook test'),
})
