/**
 * `ron-node start`: run a node until SIGTERM/SIGINT (the work: `actions/start.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { NODE_OPTIONS, nodeFlags, type NodeFlags } from './options.js'

const START_EPILOG = [
  'Ports: admin = base, storage = base+1, registry +2, passport +3, index +4, interop +5.',
  'Signals: SIGHUP reloads the config file and environment (also POST /admin/reload with a node:admin token).',
  'Signals: SIGTERM/SIGINT drain and exit 0; a second signal during shutdown exits 130 at once.',
  '',
  EXIT_CODES_HELP,
].join('\n')

/** `ron-node start`. */
export const start = defineCommand<NodeFlags>({
  command: 'start',
  describe: 'run a node: every service and the admin listener, until SIGTERM/SIGINT (SIGHUP reloads the config)',
  builder: (y) =>
    y
      .options(NODE_OPTIONS)
      .option('json', { type: 'boolean', describe: 'print one JSON line {nodeId, admin, services, tokenFile, dataDir} once ready' })
      .example('$0 start', 'start on 127.0.0.1:7700 (admin) and 7701.. (services)')
      .example('$0 start --amnesia', 'RAM only, nothing written to disk; the admin token is printed')
      .example('$0 start --port-base 7710 --data-dir ~/ron-b --peers http://127.0.0.1:7700', 'a second node forming a cluster with the first')
      .example('$0 start --port-base 0 --json --data-dir /tmp/ron', 'free ports, machine-readable summary')
      .example('RON_LOG_LEVEL=debug $0 start --config ron.toml', 'config file, overridden by env and flags')
      .epilog(START_EPILOG),
  handler: async (a) => {
    const { startCommand } = await import('../actions/start.js')
    return startCommand({ config: a.config, flags: nodeFlags(a), json: a.json })
  },
})
