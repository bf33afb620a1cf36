/**
 * `--ca <file>` and `--insecure` of the client commands, for nodes serving their own TLS
 * certificates (`ron-node start --tls-cert`): one undici Agent for `fetch` (the global dispatcher)
 * and the same settings for every `HttpTransport` the command creates.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import { errnoText } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'

/** TLS settings of the client's connections; undefined: the system roots. */
let settings: { ca?: string; rejectUnauthorized?: boolean } | undefined

/** What to spread into `new HttpTransport({...})`. */
export function transportTls(): { tls?: { ca?: string; rejectUnauthorized?: boolean } } {
  return settings === undefined ? {} : { tls: settings }
}

/**
 * Applies `--ca`/`--insecure` to this process's client connections. `--insecure` prints a warning
 * on `stderr`: the node's identity is then not checked, a token sent can be read by whoever answers.
 * @throws {@link CliError} (exit 2) for both flags at once or an unreadable/non-PEM `--ca` file.
 */
export async function configureClientTls(flags: { ca?: string | undefined; insecure?: boolean | undefined }, stderr: NodeJS.WritableStream): Promise<void> {
  if (flags.ca === undefined && flags.insecure !== true) return
  if (flags.ca !== undefined && flags.insecure === true) throw new CliError('--ca and --insecure exclude each other: --ca trusts one certificate authority, --insecure trusts anything', ExitCode.Usage)
  if (flags.ca !== undefined) {
    let pem: string
    try {
      pem = await readFile(flags.ca, 'utf8')
    } catch (e) {
      throw new CliError(`cannot read --ca ${flags.ca}: ${errnoText(e)}`, ExitCode.Usage, { cause: e })
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`--ca ${flags.ca} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`, ExitCode.Usage)
    settings = { ca: pem }
  } else {
    stderr.write('ron-node: warning: --insecure: the node\'s TLS certificate is not checked; anyone on the path can impersonate it and read the token\n')
    settings = { rejectUnauthorized: false }
  }
  const { Agent, setGlobalDispatcher } = await import('undici')
  setGlobalDispatcher(new Agent({ connect: settings }))
}
