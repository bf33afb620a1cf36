/**
 * `ron-node peers ls|forget`: the node's peers and their pinned node keys (the work:
 * `actions/peers.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, type Common } from './options.js'

const list = defineCommand<Common>({
  command: 'ls',
  describe: 'every configured peer: state (pinned, refused, unknown), node id, pinned node key, why it is refused',
  builder: (p) => p.options(COMMON).example('$0 peers ls', '').example('$0 peers ls --json', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/peers.js')).peersLsCommand(common(a), io.stdout)
  },
})

const forget = defineCommand<Common & { url: string }>({
  command: 'forget <url>',
  describe: "drop a peer's pinned node key (after it was reinstalled): its next answer is pinned afresh (scope node:admin; on a stopped node, edits <data-dir>/pins.json)",
  builder: (p) =>
    p
      .positional('url', { type: 'string', demandOption: true, describe: "the peer's admin URL, as in peers ls" })
      .options(COMMON)
      .example('$0 peers forget http://10.0.0.2:7700', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/peers.js')).peersForgetCommand({ ...common(a), url: a.url }, io.stdout)
  },
})

/** `ron-node peers`. */
export const peers = defineCommand({
  command: 'peers',
  describe: "the node's peers and their pinned node keys",
  builder: (y, io) => subcommands(y, io, [list, forget], 'say which: peers ls or peers forget'),
})
