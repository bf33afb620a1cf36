/**
 * `ron-node name set|ls|get|rm`: bind names to content (the work: `actions/objects.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, type Common } from './options.js'

const set = defineCommand<Common & { name: string; address: string; type?: string; manifest?: boolean; expectPrevious?: string }>({
  command: 'set <name> <address>',
  describe: 'bind a name (e.g. docs.alice) to content: stores a manifest {content,size,type} and binds the name to it (scope index:write)',
  builder: (n) =>
    n
      .positional('name', { type: 'string', demandOption: true })
      .positional('address', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('type', { type: 'string', describe: 'media type recorded in the manifest [default: application/octet-stream]', requiresArg: true })
      .option('manifest', { type: 'boolean', describe: 'the address already is a manifest: bind it as is' })
      .option('expect-previous', { type: 'string', describe: 'compare-and-set: the manifest address the name must have now, or "none" to only create', requiresArg: true })
      .example('ADDR=$($0 put index.html) && $0 name set docs.alice "$ADDR" --type text/html', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).nameSetCommand({ ...common(a), name: a.name, address: a.address, manifest: a.manifest, type: a.type, expectPrevious: a.expectPrevious }, io.stdout)
  },
})

const list = defineCommand<Common & { prefix?: string; limit?: number; cursor?: string }>({
  command: 'ls',
  describe: 'the names homed on the node, in name order (public)',
  builder: (n) =>
    n
      .options(COMMON)
      .option('prefix', { type: 'string', describe: 'only names starting with this', requiresArg: true })
      .option('limit', { type: 'number', describe: 'page size, 1..1000 [default: 100]', requiresArg: true })
      .option('cursor', { type: 'string', describe: 'continue after this name', requiresArg: true })
      .example('$0 name ls --prefix docs.', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).nameLsCommand({ ...common(a), prefix: a.prefix, limit: a.limit, cursor: a.cursor }, io.stdout)
  },
})

const get = defineCommand<Common & { name: string }>({
  command: 'get <name>',
  describe: 'what a name is bound to (a file or a directory), its providers and its gateway URL',
  builder: (n) => n.positional('name', { type: 'string', demandOption: true }).options(COMMON).example('$0 name get docs.alice', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).nameGetCommand({ ...common(a), name: a.name }, io.stdout)
  },
})

const rm = defineCommand<Common & { name: string; expectPrevious?: string }>({
  command: 'rm <name>',
  describe: "remove a name's binding, at its home node (scope index:write)",
  builder: (n) =>
    n
      .positional('name', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('expect-previous', { type: 'string', describe: 'only if the name is bound to this manifest address (compare-and-set)', requiresArg: true })
      .example('$0 name rm docs.alice', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/objects.js')).nameRmCommand({ ...common(a), name: a.name, expectPrevious: a.expectPrevious }, io.stdout)
  },
})

/** `ron-node name`. */
export const name = defineCommand({
  command: 'name',
  describe: 'bind names to content',
  builder: (y, io) => subcommands(y, io, [set, list, get, rm], 'say which: name set, ls, get or rm'),
})
