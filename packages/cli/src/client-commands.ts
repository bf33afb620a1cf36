/**
 * The yargs wiring of the client commands beyond put/get (issue 15 item 3): each with `--help`
 * examples, `--json`, and the exit codes of `EXIT_CODES_HELP`.
 *
 * @module
 */

import type { Argv } from 'yargs'
import type { CliIo } from './cli.js'
import { EXIT_CODES_HELP } from './exit-codes.js'

/** Client options every command takes (`--node`, `--token`, `--data-dir`, `--json`). */
export const COMMON = {
  node: { type: 'string', describe: "the node's admin URL (services found via /status) or a service URL [default: RON_NODE or http://127.0.0.1:7700]", requiresArg: true },
  token: { type: 'string', describe: 'capability token [default: RON_TOKEN, else <data-dir>/admin.token]', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data dir of the local node (its admin.token, keys) [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  json: { type: 'boolean', describe: 'machine-readable output (one JSON line)' },
  ca: { type: 'string', describe: "PEM file of the certificate authority (or self-signed certificate) of a node started with --tls-cert", requiresArg: true },
  insecure: { type: 'boolean', describe: "accept any TLS certificate (prints a warning; prefer --ca)" },
} as const

const CAVEATS = {
  'max-bytes': { type: 'number', describe: 'caveat: largest upload the token allows', requiresArg: true },
  'path-prefix': { type: 'string', describe: 'caveat: paths the token is limited to', requiresArg: true },
  methods: { type: 'string', describe: 'caveat: HTTP methods the token is limited to, comma-separated', requiresArg: true },
  'name-prefix': { type: 'string', describe: 'caveat: the names the token may write (docs.alice: docs.alice and *.docs.alice)', requiresArg: true },
} as const

interface Common {
  node?: string
  token?: string
  dataDir?: string
  json?: boolean
}

const common = (a: Common): Common => ({ node: a.node, token: a.token, dataDir: a.dataDir, json: a.json }) as Common

/** Parses `1h`, `30m`, `600` (seconds) into seconds. */
function ttl(v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const m = /^(\d+)\s*(s|m|h|d)?$/.exec(v.trim())
  if (m === null) throw new Error(`--ttl ${v}: expected e.g. 600, 30m, 1h, 1d`)
  return Number(m[1]) * ({ s: 1, m: 60, h: 3600, d: 86_400 } as const)[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd']
}

/** Registers the client commands on `y`. */
export function registerClientCommands(y: Argv, io: CliIo): Argv {
  const out = io.stdout
  return y
    .command(
      'publish <dir>',
      'publish a directory as a site: upload what the node lacks, write its manifest, bind --name, print the URL',
      (c) =>
        c
          .positional('dir', { type: 'string', demandOption: true })
          .options(COMMON)
          .option('name', { type: 'string', describe: 'the name to bind (compare-and-set against its binding now), e.g. docs.alice', requiresArg: true })
          .option('hidden', { type: 'boolean', describe: 'include files and directories whose names start with "." (.well-known always is)' })
          .option('progress', { type: 'boolean', describe: 'progress bar on stderr [default: when stderr is a terminal]' })
          .example('$0 publish ./site --name docs.alice', 'then open the printed http://docs-alice.localhost:7705/')
          .example('$0 token issue --name-prefix docs.alice > site.token && $0 publish ./site --name docs.alice --token "$(cat site.token)"', 'with a token that can write docs.alice only')
          .epilog(EXIT_CODES_HELP),
      async (a) => {
        await (await import('./commands/publish.js')).publishCommand({ ...common(a as Common), dir: a.dir, name: a.name, hidden: a.hidden, progress: a.progress }, out)
      },
    )
    .command(
      'stat <address>',
      'size, pins, integrity, placement and repair state of an object',
      (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 stat b3:…', '').epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/objects.js')).statCommand({ ...common(a as Common), address: a.address }, out),
    )
    .command(
      'ls',
      'list objects and pins on the node (scope storage:admin)',
      (c) =>
        c
          .options(COMMON)
          .option('limit', { type: 'number', describe: 'page size [default: 100]', requiresArg: true })
          .option('cursor', { type: 'string', describe: 'continue after this address', requiresArg: true })
          .example('$0 ls --limit 20', '')
          .epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/objects.js')).lsCommand({ ...common(a as Common), limit: a.limit, cursor: a.cursor }, out),
    )
    .command(
      'pin <address>',
      'keep an object (repair never lets its copies drop) (scope storage:write)',
      (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 pin b3:…', '').epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/objects.js')).pinCommand({ ...common(a as Common), address: a.address }, out),
    )
    .command(
      'unpin <address>',
      'release a pin (scope storage:write)',
      (c) => c.positional('address', { type: 'string', demandOption: true }).options(COMMON).example('$0 unpin b3:…', '').epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/objects.js')).pinCommand({ ...common(a as Common), address: a.address, unpin: true }, out),
    )
    .command('name', 'bind names to content', (c) =>
      c
        .command(
          'set <name> <address>',
          'bind a name (e.g. docs.alice) to content: stores a manifest {content,size,type} and binds the name to it (scope index:write)',
          (n) =>
            n
              .positional('name', { type: 'string', demandOption: true })
              .positional('address', { type: 'string', demandOption: true })
              .options(COMMON)
              .option('type', { type: 'string', describe: 'media type recorded in the manifest [default: application/octet-stream]', requiresArg: true })
              .option('manifest', { type: 'boolean', describe: 'the address already is a manifest: bind it as is' })
              .option('expect-previous', { type: 'string', describe: 'compare-and-set: the manifest address the name must have now, or "none" to only create', requiresArg: true })
              .example('ADDR=$($0 put index.html) && $0 name set docs.alice "$ADDR" --type text/html', '')
              .epilog(EXIT_CODES_HELP),
          async (a) =>
            (await import('./commands/objects.js')).nameSetCommand(
              { ...common(a as Common), name: a.name, address: a.address, manifest: a.manifest, type: a.type, expectPrevious: a.expectPrevious },
              out,
            ),
        )
        .command(
          'ls',
          'the names homed on the node, in name order (public)',
          (n) =>
            n
              .options(COMMON)
              .option('prefix', { type: 'string', describe: 'only names starting with this', requiresArg: true })
              .option('limit', { type: 'number', describe: 'page size, 1..1000 [default: 100]', requiresArg: true })
              .option('cursor', { type: 'string', describe: 'continue after this name', requiresArg: true })
              .example('$0 name ls --prefix docs.', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/objects.js')).nameLsCommand({ ...common(a as Common), prefix: a.prefix, limit: a.limit, cursor: a.cursor }, out),
        )
        .command(
          'get <name>',
          'what a name is bound to (a file or a directory), its providers and its gateway URL',
          (n) => n.positional('name', { type: 'string', demandOption: true }).options(COMMON).example('$0 name get docs.alice', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/objects.js')).nameGetCommand({ ...common(a as Common), name: a.name }, out),
        )
        .command(
          'rm <name>',
          "remove a name's binding, at its home node (scope index:write)",
          (n) =>
            n
              .positional('name', { type: 'string', demandOption: true })
              .options(COMMON)
              .option('expect-previous', { type: 'string', describe: 'only if the name is bound to this manifest address (compare-and-set)', requiresArg: true })
              .example('$0 name rm docs.alice', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/objects.js')).nameRmCommand({ ...common(a as Common), name: a.name, expectPrevious: a.expectPrevious }, out),
        )
        .demandCommand(1, 'say which: name set, ls, get or rm'),
    )
    .command(
      'resolve <key>',
      'resolve a name to its manifest and providers, or an address to its providers',
      (c) => c.positional('key', { type: 'string', demandOption: true }).options(COMMON).example('$0 resolve docs.alice', '').example('$0 resolve b3:… --json', '').epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/objects.js')).resolveCommand({ ...common(a as Common), key: a.key }, out),
    )
    .command('token', 'issue, verify, revoke and attenuate capability tokens', (c) =>
      c
        .command(
          'issue',
          'issue a token (scope passport:issue)',
          (t) =>
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
          async (a) =>
            (await import('./commands/tokens.js')).tokenIssueCommand(
              { ...common(a as Common), sub: a.sub, aud: a.aud, scope: a.scope, ttlSec: ttl(a.ttl), maxBytes: a.maxBytes, pathPrefix: a.pathPrefix, methods: a.methods, namePrefix: a.namePrefix },
              out,
            ),
        )
        .command(
          'verify <jwt>',
          'check a token with passport; exit 4 when it is not valid',
          (t) =>
            t
              .positional('jwt', { type: 'string', demandOption: true })
              .options(COMMON)
              .option('aud', { type: 'string', describe: 'the audience to check', requiresArg: true })
              .example('$0 token verify "$TOKEN" --aud storage', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/tokens.js')).tokenVerifyCommand({ ...common(a as Common), token: a.jwt, aud: a.aud }, out),
        )
        .command(
          'revoke <what>',
          'revoke a token (by jti or the token itself) and everything attenuated from it (scope passport:revoke)',
          (t) => t.positional('what', { type: 'string', demandOption: true }).options(COMMON).example('$0 token revoke "$TOKEN"', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/tokens.js')).tokenRevokeCommand({ ...common(a as Common), what: a.what }, out),
        )
        .command(
          'attenuate <parent>',
          'derive a narrower token from one you hold (no scope needed)',
          (t) =>
            t
              .positional('parent', { type: 'string', demandOption: true })
              .options(COMMON)
              .options(CAVEATS)
              .option('scope', { type: 'string', describe: 'narrower scopes, comma-separated', requiresArg: true })
              .option('aud', { type: 'string', describe: 'narrower audiences, comma-separated', requiresArg: true })
              .option('ttl', { type: 'string', describe: 'shorter lifetime', requiresArg: true })
              .example('$0 token attenuate "$TOKEN" --scope storage:write --ttl 10m --max-bytes 1048576', '')
              .epilog(EXIT_CODES_HELP),
          async (a) =>
            (await import('./commands/tokens.js')).tokenAttenuateCommand(
              { ...common(a as Common), parent: a.parent, scope: a.scope, aud: a.aud, ttlSec: ttl(a.ttl), maxBytes: a.maxBytes, pathPrefix: a.pathPrefix, methods: a.methods, namePrefix: a.namePrefix },
              out,
            ),
        )
        .demandCommand(1, 'say which: token issue, verify, revoke or attenuate'),
    )
    .command('keys', 'issuer keys', (c) =>
      c
        .command(
          'rotate',
          'publish the next issuer key; the previous one stays verify-only (scope passport:admin)',
          (k) => k.options(COMMON).example('$0 keys rotate', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/tokens.js')).keysRotateCommand(common(a as Common), out),
        )
        .demandCommand(1, 'say which: keys rotate'),
    )
    .command('registry', 'the signed, append-only registry log', (c) =>
      c
        .command(
          'propose <file>',
          'propose a descriptor set (JSON file, or - for stdin) (scope registry:propose)',
          (r) =>
            r
              .positional('file', { type: 'string', demandOption: true })
              .options(COMMON)
              .example(`echo '{"schemaVersion":1,"items":[]}' | $0 registry propose -`, '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryProposeCommand({ ...common(a as Common), file: unSentinel(a.file)! }, out),
        )
        .command(
          'approve <proposalId>',
          "sign a proposal with a signer key, by default the node's own (scope registry:approve)",
          (r) =>
            r
              .positional('proposalId', { type: 'string', demandOption: true })
              .options(COMMON)
              .option('key', { type: 'string', describe: 'signer key file [default: <data-dir>/registry/registry-signer.key]', requiresArg: true })
              .example('$0 registry approve p-…', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryApproveCommand({ ...common(a as Common), proposalId: a.proposalId, key: a.key }, out),
        )
        .command(
          'commit <proposalId>',
          'commit an approved proposal (scope registry:commit)',
          (r) => r.positional('proposalId', { type: 'string', demandOption: true }).options(COMMON).example('$0 registry commit p-…', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryCommitCommand({ ...common(a as Common), proposalId: a.proposalId }, out),
        )
        .command(
          'head',
          'the current version, hash and tree',
          (r) => r.options(COMMON).example('$0 registry head --json', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryHeadCommand(common(a as Common), out),
        )
        .command(
          'verify',
          'verify the whole log from its C2SP tiles, trusting only the log key (pinned on first use); exit 5 when it does not verify',
          (r) =>
            r
              .options(COMMON)
              .option('log-key', { type: 'string', describe: "the log's verifier key, as ron-node status prints it [default: the pinned one, else pin the node's on first use]", requiresArg: true })
              .option('witness', { type: 'string', array: true, describe: 'a witness cosignature key (repeat for several)', requiresArg: true })
              .option('witness-quorum', { type: 'number', describe: 'valid cosignatures needed from the --witness keys [default: all of them]', requiresArg: true })
              .option('wait', { type: 'number', describe: 'ms to wait for the witness quorum on the latest checkpoint [default: 5000]', requiresArg: true })
              .example('$0 registry verify', 'verify, pinning the key on first use')
              .example('$0 registry verify --log-key ron.registry/1a2b3c4d+…+… --witness w1+…+… --witness w2+…+…', 'require both witnesses')
              .epilog(EXIT_CODES_HELP),
          async (a) =>
            (await import('./commands/registry-verify.js')).registryVerifyCommand(
              { ...common(a as Common), logKey: a.logKey, witness: a.witness?.map(String), witnessQuorum: a.witnessQuorum, waitMs: a.wait },
              out,
              io.stderr,
            ),
        )
        .command(
          'watch',
          'print commits as they happen (SSE), until Ctrl+C',
          (r) =>
            r
              .options(COMMON)
              .option('from', { type: 'number', describe: 'replay commits after this version first', requiresArg: true })
              .option('count', { type: 'number', describe: 'stop after this many commits', requiresArg: true })
              .example('$0 registry watch --from 0 --json', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryWatchCommand({ ...common(a as Common), from: a.from, count: a.count }, out),
        )
        .command(
          'fsck',
          "verify the local node's registry log on disk (read-only unless --repair); exit 5 on problems",
          (r) =>
            r
              .options(COMMON)
              .option('dir', { type: 'string', describe: 'registry directory [default: <data-dir>/registry]', requiresArg: true })
              .option('repair', { type: 'boolean', describe: 'cut what was never acknowledged (a torn record past head.bin), as a start would; never an acknowledged entry' })
              .option('rebuild-head', { type: 'boolean', describe: 'write head.bin for a log without a usable one (a log from before head records); only when nothing else is wrong' })
              .example('$0 registry fsck', '')
              .example('$0 registry fsck --repair', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).registryFsckCommand({ ...common(a as Common), dir: a.dir, repair: a.repair, rebuildHead: a.rebuildHead }, out),
        )
        .demandCommand(1, 'say which: registry propose, approve, commit, head, watch or fsck'),
    )
    .command('webhook', 'provider webhooks received by interop', (c) =>
      c
        .command(
          'test <provider>',
          "send a signed test delivery (github, slack, stripe, standard) with the node's secret for it",
          (w) =>
            w
              .positional('provider', { type: 'string', demandOption: true, choices: ['github', 'slack', 'stripe', 'standard'] })
              .options(COMMON)
              .option('secret', { type: 'string', describe: "the provider secret [default: the node's, from <data-dir>/interop/webhook-secrets.json]", requiresArg: true })
              .example('$0 webhook test github', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).webhookTestCommand({ ...common(a as Common), provider: a.provider, secret: a.secret }, out),
        )
        .demandCommand(1, 'say which: webhook test'),
    )
    .command('receipt', 'webhook receipts stored by interop', (c) =>
      c
        .command(
          'verify <address>',
          "re-verify a stored webhook receipt with the provider's secret (no replay window); exit 5 if it does not verify",
          (w) =>
            w
              .positional('address', { type: 'string', demandOption: true })
              .options(COMMON)
              .option('secret', { type: 'string', describe: "the provider secret [default: the node's, from <data-dir>/interop/webhook-secrets.json]", requiresArg: true })
              .example('$0 receipt verify b3:…', 'the receipt address printed by `webhook test` or returned in the 202')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/registry.js')).receiptVerifyCommand({ ...common(a as Common), address: a.address, secret: a.secret }, out),
        )
        .demandCommand(1, 'say which: receipt verify'),
    )
    .command('peers', "the node's peers and their pinned node keys", (c) =>
      c
        .command(
          'ls',
          'every configured peer: state (pinned, refused, unknown), node id, pinned node key, why it is refused',
          (p) => p.options(COMMON).example('$0 peers ls', '').example('$0 peers ls --json', '').epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/peers.js')).peersLsCommand(common(a as Common), out),
        )
        .command(
          'forget <url>',
          "drop a peer's pinned node key (after it was reinstalled): its next answer is pinned afresh (scope node:admin; on a stopped node, edits <data-dir>/pins.json)",
          (p) =>
            p
              .positional('url', { type: 'string', demandOption: true, describe: "the peer's admin URL, as in peers ls" })
              .options(COMMON)
              .example('$0 peers forget http://10.0.0.2:7700', '')
              .epilog(EXIT_CODES_HELP),
          async (a) => (await import('./commands/peers.js')).peersForgetCommand({ ...common(a as Common), url: a.url }, out),
        )
        .demandCommand(1, 'say which: peers ls or peers forget'),
    )
    .command(
      'status',
      'a table of every service of the node: readiness, queues, uptime, peers',
      (c) => c.options(COMMON).example('$0 status', '').example('$0 status --node http://10.0.0.2:7700 --json', '').epilog(EXIT_CODES_HELP),
      async (a) => (await import('./commands/status.js')).statusCommand(common(a as Common), out),
    )
    .command(
      'doctor',
      'check the node, its data directory, key files, ports, disk, peers and clock skew; each finding says what to do',
      (c) => c.options(COMMON).example('$0 doctor', '').epilog(EXIT_CODES_HELP),
      async (a) => {
        await (await import('./commands/status.js')).doctorCommand(common(a as Common), out)
      },
    )
}

const unSentinel = (s: string | undefined): string | undefined => (s === '\u0000-' ? '-' : s)
