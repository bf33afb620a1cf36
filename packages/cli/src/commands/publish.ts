/**
 * `ron-node publish`: publish a directory as a site (the work: `actions/publish.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand } from './command.js'
import { COMMON, common, type Common } from './options.js'

/** `ron-node publish <dir>`. */
export const publish = defineCommand<Common & { dir: string; name?: string; hidden?: boolean; progress?: boolean }>({
  command: 'publish <dir>',
  describe: 'publish a directory as a site: upload what the node lacks, write its manifest, bind --name, print the URL',
  builder: (c) =>
    c
      .positional('dir', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('name', { type: 'string', describe: 'the name to bind (compare-and-set against its binding now), e.g. docs.alice', requiresArg: true })
      .option('hidden', { type: 'boolean', describe: 'include files and directories whose names start with "." (.well-known always is)' })
      .option('progress', { type: 'boolean', describe: 'progress bar on stderr [default: when stderr is a terminal]' })
      .example('$0 publish ./site --name docs.alice', 'then open the printed http://docs-alice.localhost:7705/')
      .example('$0 token issue --name-prefix docs.alice > site.token && $0 publish ./site --name docs.alice --token "$(cat site.token)"', 'with a token that can write docs.alice only')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/publish.js')).publishCommand({ ...common(a), dir: a.dir, name: a.name, hidden: a.hidden, progress: a.progress }, io.stdout)
  },
})
