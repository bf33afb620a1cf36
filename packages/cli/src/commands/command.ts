/**
 * What a `ron-node` command is: one module under `commands/` exporting its yargs definition
 * (`command`, `describe`, `builder`) and a `handler` that imports the work (`actions/`) only when
 * the command runs, so `--help`, `--version` and the client commands load no server code.
 *
 * @module
 */

import type { Argv } from 'yargs'

/** Output streams a command writes to. */
export interface CommandIo {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/** One command: its yargs definition and its handler. */
export interface CliCommand<A = never> {
  /** The yargs command string, e.g. `put <file>`. */
  command: string
  /** The one-line description `--help` shows. */
  describe: string
  /** Positionals, options, examples, epilog, and the subcommands of a command that has them. */
  builder: (y: Argv, io: CommandIo) => Argv
  /**
   * Runs the command (absent for a command that only groups subcommands).
   * @returns the process exit code when the command decides it (`start`), else nothing (0)
   */
  handler?: (args: A, io: CommandIo) => Promise<number | void>
}

/** A command with typed arguments, as the list in `cli.ts` holds it. */
export function defineCommand<A>(c: CliCommand<A>): CliCommand {
  return c
}

/**
 * Registers `c` on `y`: its builder with `io`, and its handler (when it has one), whose exit code
 * goes to `onExit`.
 */
export function addCommand(y: Argv, c: CliCommand, io: CommandIo, onExit?: (code: number) => void): Argv {
  const run = c.handler
  if (run === undefined) return y.command(c.command, c.describe, (b) => c.builder(b, io))
  return y.command(
    c.command,
    c.describe,
    (b) => c.builder(b, io),
    async (a) => {
      const code = await run(a as never, io)
      if (typeof code === 'number') onExit?.(code)
    },
  )
}

/** Registers the subcommands `cmds` on `y` and demands one of them (`demand` says which). */
export function subcommands(y: Argv, io: CommandIo, cmds: readonly CliCommand[], demand: string): Argv {
  for (const c of cmds) y = addCommand(y, c, io)
  return y.demandCommand(1, demand)
}
