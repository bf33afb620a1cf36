/**
 * The `ron-node` command line: the commands of `commands/` (each one module with its yargs
 * definition and a handler that imports its work when it runs), exit codes and one-line error
 * reporting.
 *
 * @module
 */

import yargs from 'yargs'
import { CliError, EXIT_CODES_HELP, ExitCode, describeError, exitCodeFor } from './exit-codes.js'
import { authContext } from './auth-context.js'
import { addCommand } from './commands/command.js'
import { COMMANDS } from './commands/index.js'
import { STDIO_SENTINEL } from './commands/options.js'
import { cliVersion } from './version.js'

// Commands are imported when they run, so `--help`, `--version` and the client commands do not
// pay for loading the whole service stack.

/** The part of yargs's (untyped) internals that {@link runCli} touches. */
interface YargsInternals {
  getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: () => void } | undefined }
}

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
  let parser = yargs(args.map((a) => (a === '-' ? STDIO_SENTINEL : a)))
    .scriptName('ron-node')
    .usage('$0 <command> [options]')
  for (const command of COMMANDS) parser = addCommand(parser, command, io, (code) => (exitCode = code))
  parser = parser
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
  // yargs renders the running command's whole help text as soon as its handler starts (in case the
  // handler later asks for it), which costs a client command ~50 ms of string-width. Our handlers
  // never show help: failures print one line (above), and --help is answered before any handler.
  // Internals of yargs 18: a version without them keeps its default (slower, still correct).
  const usage = (parser as unknown as YargsInternals).getInternalMethods?.().getUsageInstance?.()
  if (typeof usage?.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => {}
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
