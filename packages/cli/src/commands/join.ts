/**
 * `ron-node join`: enrol this node with another node's passport (the work: `actions/join.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'

/** `ron-node join <url>`. */
export const join = defineCommand<{ url: string; token?: string; dataDir?: string; json?: boolean }>({
  command: 'join <url>',
  describe: "enrol this node's key with another node's passport and write <data-dir>/config.json (passport.url, registry.url, that node as a peer)",
  builder: (y) =>
    y
      .positional('url', { type: 'string', describe: "the passport owner's admin URL", demandOption: true })
      .option('token', { type: 'string', describe: "the owner's admin token (passport:admin) [default: RON_TOKEN]", requiresArg: true })
      .option('data-dir', { type: 'string', describe: "this node's data directory [default: RON_DATA_DIR or the platform data dir]", requiresArg: true })
      .option('json', { type: 'boolean', describe: 'print {"nodeId","passport","registry","peer","scopes","configFile"}' })
      .example('$0 join http://10.0.0.1:7700 --token "$OWNER_TOKEN"', 'then: ron-node start (no flags needed)')
      .epilog(EXIT_CODES_HELP),
  handler: async (f, io) => {
    const { joinCommand } = await import('../actions/join.js')
    await joinCommand({ url: f.url, token: f.token, dataDir: f.dataDir, json: f.json }, io.stdout)
  },
})
