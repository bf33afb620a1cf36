/**
 * `ron-node token issue|verify|revoke|attenuate`: capability tokens (the work: `actions/tokens.ts`).
 *
 * @module
 */

import { CliError, EXIT_CODES_HELP, ExitCode } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { CAVEATS, COMMON, common, ttl, type Common } from './options.js'

interface Caveats {
  maxBytes?: number
  pathPrefix?: string
  methods?: string
  namePrefix?: string
}

const issue = defineCommand<Common & Caveats & { sub?: string; aud?: string; scope?: string; ttl?: string }>({
  command: 'issue',
  describe: 'issue a token (scope passport:issue)',
  builder: (t) =>
    t
      .options(COMMON)
      .options(CAVEATS)
      .option('sub', { type: 'string', describe: 'who the token is for (required unless --name-prefix: publisher:<prefix>)', requiresArg: true })
      .option('aud', { type: 'string', describe: 'services, comma-separated (required unless --name-prefix: storage,index)', requiresArg: true })
      .option('scope', { type: 'string', describe: 'scopes, comma-separated (required unless --name-prefix: storage:write,index:write)', requiresArg: true })
      .option('ttl', { type: 'string', describe: 'lifetime: 600, 30m, 1h [default: the policy default]', requiresArg: true })
      .example('$0 token issue --sub ci --aud storage --scope storage:write --ttl 1h --max-bytes 10485760', '')
      .example('$0 token issue --name-prefix docs.alice', 'a token that publishes docs.alice and names under it, nothing else')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/tokens.js')).tokenIssueCommand(
      { ...common(a), sub: a.sub, aud: a.aud, scope: a.scope, ttlSec: ttl(a.ttl), maxBytes: a.maxBytes, pathPrefix: a.pathPrefix, methods: a.methods, namePrefix: a.namePrefix },
      io.stdout,
    )
  },
})

const verify = defineCommand<Common & { jwt: string; aud?: string }>({
  command: 'verify <jwt>',
  describe: 'check a token with passport; exit 4 when it is not valid',
  builder: (t) =>
    t
      .positional('jwt', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('aud', { type: 'string', describe: 'the audience to check', requiresArg: true })
      .example('$0 token verify "$TOKEN" --aud storage', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/tokens.js')).tokenVerifyCommand({ ...common(a), token: a.jwt, aud: a.aud }, io.stdout)
  },
})

const revoke = defineCommand<Common & { what?: string; _: (string | number)[] }>({
  command: 'revoke [what]',
  describe: 'revoke a token (by jti or the token itself) and everything attenuated from it (scope passport:revoke)',
  builder: (t) =>
    t
      .positional('what', { type: 'string', describe: 'the token or its jti (a jti that begins with "-" goes after "--")' })
      .options(COMMON)
      .example('$0 token revoke "$TOKEN"', '')
      .example('$0 token revoke -- -Xq3v…', 'a jti that begins with "-"')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    // yargs fills no positional from what follows "--": it lands in `_` after the command words.
    const rest = a._.slice(2).map(String)
    const what = a.what === undefined ? rest : [a.what, ...rest]
    if (what.length !== 1) {
      throw new CliError(
        `token revoke takes one token or jti, got ${what.length}; a jti that begins with "-" goes after "--": ron-node token revoke -- <jti>`,
        ExitCode.Usage,
      )
    }
    await (await import('../actions/tokens.js')).tokenRevokeCommand({ ...common(a), what: what[0]! }, io.stdout)
  },
})

const attenuate = defineCommand<Common & Caveats & { parent: string; scope?: string; aud?: string; ttl?: string }>({
  command: 'attenuate <parent>',
  describe: 'derive a narrower token from one you hold (no scope needed)',
  builder: (t) =>
    t
      .positional('parent', { type: 'string', demandOption: true })
      .options(COMMON)
      .options(CAVEATS)
      .option('scope', { type: 'string', describe: 'narrower scopes, comma-separated', requiresArg: true })
      .option('aud', { type: 'string', describe: 'narrower audiences, comma-separated', requiresArg: true })
      .option('ttl', { type: 'string', describe: 'shorter lifetime', requiresArg: true })
      .example('$0 token attenuate "$TOKEN" --scope storage:write --ttl 10m --max-bytes 1048576', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/tokens.js')).tokenAttenuateCommand(
      { ...common(a), parent: a.parent, scope: a.scope, aud: a.aud, ttlSec: ttl(a.ttl), maxBytes: a.maxBytes, pathPrefix: a.pathPrefix, methods: a.methods, namePrefix: a.namePrefix },
      io.stdout,
    )
  },
})

/** `ron-node token`. */
export const token = defineCommand({
  command: 'token',
  describe: 'issue, verify, revoke and attenuate capability tokens',
  builder: (y, io) => subcommands(y, io, [issue, verify, revoke, attenuate], 'say which: token issue, verify, revoke or attenuate'),
})
