/**
 * `ron-node put`: store a file (the work: `actions/put.ts`, client code only).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { CLIENT_OPTIONS, unSentinel, type ClientFlags } from './options.js'

/** `ron-node put <file>`. */
export const put = defineCommand<ClientFlags & { file?: string; expect?: string }>({
  command: 'put <file>',
  describe: 'store a file (or - for stdin) and print its b3: address',
  builder: (y) =>
    y
      .positional('file', { type: 'string', describe: 'file to upload, or - for stdin', demandOption: true })
      .options(CLIENT_OPTIONS)
      .option('expect', { type: 'string', describe: 'fail (exit 5) unless the content hashes to this b3: address', requiresArg: true })
      .option('json', { type: 'boolean', describe: 'print {"address","size"}' })
      .example('$0 put photo.jpg', 'prints b3:…')
      .example('tar c dir | $0 put - --json', 'from stdin, JSON output')
      .example('$0 put f.bin --node http://10.0.0.2:7700 --token "$(cat token)"', 'another node')
      .epilog(EXIT_CODES_HELP),
  handler: async (f, io) => {
    const { putCommand } = await import('../actions/put.js')
    await putCommand({ file: unSentinel(f.file) ?? '-', node: f.node, token: f.token, dataDir: f.dataDir, json: f.json, progress: f.progress, expect: f.expect }, io.stdout)
  },
})
