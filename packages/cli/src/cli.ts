/**
 * The `ron-node` command line: yargs wiring of the commands in `commands/`, exit codes and
 * one-line error reporting.
 *
 * @module
 */

import yargs from 'yargs'
import type { NodeConfigInput } from './config.js'
import { CliError, EXIT_CODES_HELP, ExitCode, describeError, exitCodeFor } from './exit-codes.js'
import { AVAILABLE_SERVICES } from './ports.js'
import { authContext } from './auth-context.js'
import { registerClientCommands } from './client-commands.js'
import { cliVersion } from './version.js'

// Commands are imported when they run, so `--help`, `--version` and the client commands do not
// pay for loading the whole service stack.

/** Log levels accepted by `--log-level` (kept here so the parser does not load pino). */
const LOG_LEVEL_CHOICES = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

interface NodeFlags {
  config?: string
  dataDir?: string
  host?: string
  portBase?: string
  services?: string
  logLevel?: string
  drainDeadline?: string
  peers?: string
  advertise?: string
  passportUrl?: string
  registryUrl?: string
  etcd?: string
  tlsCert?: string
  tlsKey?: string
  amnesia?: boolean
  rf?: string
  writeQuorum?: string
  repairInterval?: string
  json?: boolean
}

interface ClientFlags {
  node?: string
  token?: string
  dataDir?: string
  json?: boolean
  progress?: boolean
}

/** Flags → the config's `overrides` (only those given). */
function nodeFlags(a: NodeFlags): NodeConfigInput {
  const out: Record<string, unknown> = {}
  if (a.dataDir !== undefined) out['dataDir'] = a.dataDir
  if (a.host !== undefined) out['host'] = a.host
  if (a.portBase !== undefined) out['portBase'] = a.portBase
  if (a.services !== undefined) out['services'] = a.services
  if (a.logLevel !== undefined) out['logLevel'] = a.logLevel
  if (a.drainDeadline !== undefined) out['drainDeadline'] = a.drainDeadline
  if (a.peers !== undefined) out['peers'] = a.peers
  if (a.advertise !== undefined) out['advertise'] = a.advertise
  if (a.passportUrl !== undefined) out['passportUrl'] = a.passportUrl
  if (a.registryUrl !== undefined) out['registryUrl'] = a.registryUrl
  if (a.etcd !== undefined) out['etcd'] = a.etcd
  if (a.amnesia !== undefined) out['amnesia'] = a.amnesia
  if (a.tlsCert !== undefined || a.tlsKey !== undefined) out['tls'] = { ...(a.tlsCert === undefined ? {} : { cert: a.tlsCert }), ...(a.tlsKey === undefined ? {} : { key: a.tlsKey }) }
  const storage: Record<string, unknown> = {}
  if (a.rf !== undefined) storage['rf'] = a.rf
  if (a.writeQuorum !== undefined) storage['writeQuorum'] = a.writeQuorum
  if (a.repairInterval !== undefined) storage['repair'] = { interval: a.repairInterval }
  if (Object.keys(storage).length > 0) out['storage'] = storage
  return out
}

const NODE_OPTIONS = {
  config: { type: 'string', describe: 'config file (JSON, or TOML when it ends in .toml)', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data directory [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  host: { type: 'string', describe: 'interface to bind [default: 127.0.0.1]', requiresArg: true },
  'port-base': { type: 'string', describe: 'admin port; storage = base+1, registry..interop = base+2..5; 0 = free ports [default: 7700]', requiresArg: true },
  services: { type: 'string', describe: `services to host, comma-separated [default: all: ${AVAILABLE_SERVICES.join(', ')}]`, requiresArg: true },
  peers: { type: 'string', describe: "other nodes' admin URLs, comma-separated (their services are found via /status)", requiresArg: true },
  advertise: { type: 'string', describe: 'host name (or scheme://host) peers and clients reach this node at [default: --host]', requiresArg: true },
  'tls-cert': { type: 'string', describe: 'PEM certificate file: every listener serves HTTPS (with --tls-key)', requiresArg: true },
  'tls-key': { type: 'string', describe: 'PEM private key file for --tls-cert', requiresArg: true },
  'passport-url': { type: 'string', describe: "another node's passport URL: run no passport, verify with its keys and revocations, get service tokens from it (enrol first: ron-node join)", requiresArg: true },
  'registry-url': { type: 'string', describe: "another node's registry URL: run no registry; registry commands go there", requiresArg: true },
  etcd: { type: 'string', describe: 'etcd client URLs, comma-separated: registry, passport state and names on etcd (coordination.etcd in a config file)', requiresArg: true },
  amnesia: { type: 'boolean', describe: 'RAM only: memory stores, ephemeral keys, admin token printed; nothing written to disk' },
  rf: { type: 'string', describe: 'copies of every object across this node and its peers [default: 2 with peers, 1 alone]', requiresArg: true },
  'write-quorum': { type: 'string', describe: 'durable copies before a put is acknowledged [default: 1]', requiresArg: true },
  'repair-interval': { type: 'string', describe: 'how often storage repair runs, e.g. 30s [default: 30s]', requiresArg: true },
  'log-level': { type: 'string', choices: LOG_LEVEL_CHOICES, describe: 'log level [default: info]', requiresArg: true },
  'drain-deadline': { type: 'string', describe: 'how long shutdown lets requests finish, e.g. 3s [default: 3s]', requiresArg: true },
} as const

const CLIENT_OPTIONS = {
  node: { type: 'string', describe: "the node's admin URL (services found via /status) or a service URL [default: RON_NODE or http://127.0.0.1:7700]", requiresArg: true },
  token: { type: 'string', describe: 'capability token [default: RON_TOKEN, else <data-dir>/admin.token]', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data dir whose admin.token to use [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  progress: { type: 'boolean', describe: 'progress bar on stderr [default: when stderr is a terminal]' },
  ca: { type: 'string', describe: 'PEM file of the certificate authority (or self-signed certificate) of a node started with --tls-cert', requiresArg: true },
  insecure: { type: 'boolean', describe: 'accept any TLS certificate (prints a warning; prefer --ca)' },
} as const

const START_EPILOG = [
  'Ports: admin = base, storage = base+1, registry +2, passport +3, index +4, interop +5.',
  'Signals: SIGHUP reloads the config file and environment (also POST /admin/reload with a node:admin token).',
  'Signals: SIGTERM/SIGINT drain and exit 0; a second signal during shutdown exits 130 at once.',
  '',
  EXIT_CODES_HELP,
].join('\n')

/**
 * yargs-parser reads a lone `-` as an empty flag; it is swapped for this sentinel (a NUL cannot
 * come from a real command line) before parsing and back afterwards.
 */
const STDIO_SENTINEL = '\u0000-'
const unSentinel = (s: string | undefined): string | undefined => (s === STDIO_SENTINEL ? '-' : s)

/** Output streams of {@link runCli}; injectable for tests. */
export interface CliIo {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/**
 * Runs `ron-node` with `args` (without the node and script paths) and resolves with the exit code.
 * Errors are printed as one line, `ron-node: <message>`, on stderr.
 *
 * @example
 * ```ts
 * const code = await runCli(['put', 'photo.jpg', '--json'])
 * ```
 */
export async function runCli(args: readonly string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let exitCode: number = ExitCode.Ok
  const parser = yargs(args.map((a) => (a === '-' ? STDIO_SENTINEL : a)))
    .scriptName('ron-node')
    .usage('$0 <command> [options]')
    .command(
      'start',
      'run a node: every service and the admin listener, until SIGTERM/SIGINT (SIGHUP reloads the config)',
      (y) =>
        y
          .options(NODE_OPTIONS)
          .option('json', { type: 'boolean', describe: 'print one JSON line {nodeId, admin, services, tokenFile, dataDir} once ready' })
          .example('$0 start', 'start on 127.0.0.1:7700 (admin) and 7701.. (services)')
          .example('$0 start --amnesia', 'RAM only, nothing written to disk; the admin token is printed')
          .example('$0 start --port-base 7710 --data-dir ~/ron-b --peers http://127.0.0.1:7700', 'a second node forming a cluster with the first')
          .example('$0 start --port-base 0 --json --data-dir /tmp/ron', 'free ports, machine-readable summary')
          .example('RON_LOG_LEVEL=debug $0 start --config ron.toml', 'config file, overridden by env and flags')
          .epilog(START_EPILOG),
      async (a) => {
        const { startCommand } = await import('./commands/start.js')
        exitCode = await startCommand({ config: a.config, flags: nodeFlags(a as NodeFlags), json: a.json })
      },
    )
    .command(
      'put <file>',
      'store a file (or - for stdin) and print its b3: address',
      (y) =>
        y
          .positional('file', { type: 'string', describe: 'file to upload, or - for stdin', demandOption: true })
          .options(CLIENT_OPTIONS)
          .option('expect', { type: 'string', describe: 'fail (exit 5) unless the content hashes to this b3: address', requiresArg: true })
          .option('json', { type: 'boolean', describe: 'print {"address","size"}' })
          .example('$0 put photo.jpg', 'prints b3:…')
          .example('tar c dir | $0 put - --json', 'from stdin, JSON output')
          .example('$0 put f.bin --node http://10.0.0.2:7700 --token "$(cat token)"', 'another node')
          .epilog(EXIT_CODES_HELP),
      async (a) => {
        const f = a as ClientFlags & { expect?: string }
        const { putCommand } = await import('./commands/put.js')
        await putCommand({ file: unSentinel(a.file) ?? '-', node: f.node, token: f.token, dataDir: f.dataDir, json: f.json, progress: f.progress, expect: f.expect }, io.stdout)
      },
    )
    .command(
      'get <address>',
      'fetch an object by address, verified, to a file (-o) or stdout',
      (y) =>
        y
          .positional('address', { type: 'string', describe: 'b3: address', demandOption: true })
          .options(CLIENT_OPTIONS)
          .option('output', { alias: 'o', type: 'string', describe: 'output file, written atomically once verified [default: stdout]', requiresArg: true })
          .example('$0 get b3:… -o photo.jpg', 'verified, then renamed into place')
          .example('$0 get b3:… | sha256sum', 'to stdout')
          .epilog(EXIT_CODES_HELP),
      async (a) => {
        const f = a as ClientFlags & { output?: string }
        const { getCommand } = await import('./commands/get.js')
        await getCommand({ address: a.address, output: unSentinel(f.output), node: f.node, token: f.token, dataDir: f.dataDir, progress: f.progress }, io.stdout)
      },
    )
    .command(
      'join <url>',
      "enrol this node's key with another node's passport and write <data-dir>/config.json (passport.url, registry.url, that node as a peer)",
      (y) =>
        y
          .positional('url', { type: 'string', describe: "the passport owner's admin URL", demandOption: true })
          .option('token', { type: 'string', describe: "the owner's admin token (passport:admin) [default: RON_TOKEN]", requiresArg: true })
          .option('data-dir', { type: 'string', describe: "this node's data directory [default: RON_DATA_DIR or the platform data dir]", requiresArg: true })
          .option('json', { type: 'boolean', describe: 'print {"nodeId","passport","registry","peer","scopes","configFile"}' })
          .example('$0 join http://10.0.0.1:7700 --token "$OWNER_TOKEN"', 'then: ron-node start (no flags needed)')
          .epilog(EXIT_CODES_HELP),
      async (a) => {
        const f = a as { url: string; token?: string; dataDir?: string; json?: boolean }
        const { joinCommand } = await import('./commands/join.js')
        await joinCommand({ url: f.url, token: f.token, dataDir: f.dataDir, json: f.json }, io.stdout)
      },
    )
    .command('config', 'print or validate the effective configuration', (y) =>
      y
        .command(
          'print',
          'print the effective config (defaults < file < RON_* env < flags), secrets redacted',
          (c) => c.options(NODE_OPTIONS).example('$0 config print --config ron.toml', ''),
          async (a) => {
            const { configPrintCommand } = await import('./commands/config.js')
            configPrintCommand({ config: a.config, flags: nodeFlags(a as NodeFlags) }, io.stdout)
          },
        )
        .command(
          'validate',
          'check the config; exit 2 naming the bad key',
          (c) => c.options(NODE_OPTIONS).example('$0 config validate --config ron.toml', ''),
          async (a) => {
            const { configValidateCommand } = await import('./commands/config.js')
            configValidateCommand({ config: a.config, flags: nodeFlags(a as NodeFlags) }, io.stdout)
          },
        )
        .demandCommand(1, 'say which: config print or config validate'),
    )
  registerClientCommands(parser, io)
    // --ca/--insecure of the client commands: applied before the command's first connection.
    .middleware(async (a) => {
      const f = a as { ca?: unknown; insecure?: unknown; _: unknown[] }
      if (f._[0] === 'start') return
      if (f.ca !== undefined || f.insecure === true) {
        const { configureClientTls } = await import('./client-tls.js')
        await configureClientTls({ ca: typeof f.ca === 'string' ? f.ca : undefined, insecure: f.insecure === true }, io.stderr)
      }
    })
    .completion('completion', 'print a shell completion script (bash/zsh): ron-node completion >> ~/.bashrc')
    .demandCommand(1, 'say which command to run (see --help)')
    .strict()
    .recommendCommands()
    .epilog(`${EXIT_CODES_HELP}\n\nDocs: packages/cli/README.md`)
    .help()
    .alias('h', 'help')
    .version(cliVersion())
    .wrap(Math.min(110, (io.stdout as { columns?: number }).columns ?? 100))
    .exitProcess(false)
    .fail((msg: string | null, err: Error | undefined) => {
      if (err !== undefined && err !== null) throw err
      throw new CliError(`${msg ?? 'bad usage'} (see ron-node --help)`, ExitCode.Usage)
    })
  try {
    await parser.parseAsync()
    return exitCode
  } catch (e) {
    // A refusal says which node refused which token: a mismatch of --node and the token is then plain.
    const refused = (e as { status?: unknown } | null)?.status === 401 && !(e instanceof CliError)
    io.stderr.write(`ron-node: ${describeError(e)}${refused ? authContext() : ''}\n`)
    return exitCodeFor(e)
  }
}
