/**
 * `ron-node config print` and `ron-node config validate`.
 *
 * @module
 */

import { loadNodeConfig, printableConfig, type NodeConfigInput } from '../config.js'
import { defaultDataDir } from '../data-dir.js'

/** Arguments of the config commands. */
export interface ConfigArgs {
  config?: string | undefined
  flags: NodeConfigInput
  env?: Record<string, string | undefined>
}

/**
 * Prints the effective configuration (defaults < file < env < flags) as JSON with secrets replaced
 * by `[redacted]`, and the resolved data directory filled in.
 * @throws {@link CliError} (exit 2) naming the offending key when the config is invalid.
 */
export function configPrintCommand(args: ConfigArgs, out: NodeJS.WritableStream = process.stdout): void {
  const env = args.env ?? process.env
  const cfg = loadNodeConfig({ file: args.config, env, flags: args.flags })
  const effective = { ...cfg, dataDir: cfg.dataDir ?? defaultDataDir({ env }) }
  out.write(`${JSON.stringify(printableConfig(effective), null, 2)}\n`)
}

/**
 * Validates the configuration and prints `config ok` (with the file name when one was given).
 * @throws {@link CliError} (exit 2) naming the offending key when the config is invalid.
 */
export function configValidateCommand(args: ConfigArgs, out: NodeJS.WritableStream = process.stdout): void {
  loadNodeConfig({ file: args.config, env: args.env ?? process.env, flags: args.flags })
  out.write(`config ok${args.config === undefined ? '' : `: ${args.config}`}\n`)
}
