/**
 * Exit codes of every `ron-node` command and the one error type commands throw to pick one.
 *
 * @module
 */

/**
 * The process exit codes `ron-node` uses. Scripts may rely on them; they are listed in `--help`
 * and in the README.
 */
export const ExitCode = {
  /** Success. */
  Ok: 0,
  /** Any other failure (I/O error, bad data dir, port in use, internal error). */
  Error: 1,
  /** Bad usage: unknown command or option, missing argument, invalid config. */
  Usage: 2,
  /** The object or route does not exist (404). */
  NotFound: 3,
  /** Missing, invalid or insufficient token (401/403). */
  Auth: 4,
  /** Content did not match its address (422 IntegrityFailed, or a local verification failure). */
  Integrity: 5,
  /** The node is unreachable, not ready, draining, busy or timed out (connection errors, 429, 503, 504). */
  Unavailable: 6,
} as const

/** One of the values of {@link ExitCode}. */
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

/** The exit-code table as printed in the `--help` epilog. */
export const EXIT_CODES_HELP = [
  'Exit codes:',
  '  0  ok',
  '  1  error (I/O, data dir, port in use, internal)',
  '  2  usage or invalid config',
  '  3  not found',
  '  4  auth: missing/invalid token or missing scope (401/403)',
  '  5  integrity failure (content does not match its address)',
  '  6  node unreachable, not ready, draining, busy or timed out',
].join('\n')

/**
 * A failure a command reports as one line on stderr (no stack) with a chosen exit code.
 *
 * @example
 * ```ts
 * throw new CliError('port 7701 is in use (storage); pick another with --port-base', ExitCode.Error)
 * ```
 */
export class CliError extends Error {
  /** The process exit code to use. */
  readonly exitCode: ExitCodeValue

  constructor(message: string, exitCode: ExitCodeValue = ExitCode.Error, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CliError'
    this.exitCode = exitCode
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED'])

/** True for a RonError (any copy of @ron/core): an Error with a string `code`, numeric `status` and boolean `retryable`. */
function isRonLike(e: unknown): e is Error & { code: string } {
  const r = e as { code?: unknown; status?: unknown; retryable?: unknown } | null
  return e instanceof Error && typeof r?.code === 'string' && typeof r.status === 'number' && typeof r.retryable === 'boolean'
}

/** Walks `cause` chains looking for a Node/undici network error code. */
function networkCode(e: unknown): string | undefined {
  let cur: unknown = e
  for (let i = 0; i < 6 && cur !== undefined && cur !== null; i++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code
    const errors = (cur as { errors?: unknown }).errors
    if (Array.isArray(errors)) {
      for (const inner of errors) {
        const c = networkCode(inner)
        if (c !== undefined) return c
      }
    }
    cur = (cur as { cause?: unknown }).cause
  }
  return undefined
}

/**
 * Maps anything thrown by a command to an exit code: {@link CliError} keeps its own, RON errors map
 * by `code` (NotFound → 3, Unauthorized/Forbidden → 4, IntegrityFailed → 5, Busy/NotReady/Draining/
 * Timeout/BreakerOpen/Brownout/Unavailable/Canceled/Closed → 6, Malformed → 2), network errors → 6,
 * anything else → 1.
 */
export function exitCodeFor(e: unknown): ExitCodeValue {
  if (e instanceof CliError) return e.exitCode
  // Duck-typed on the stable `code` (not instanceof) so that this module, loaded by every command,
  // does not pull in @ron/core; RonError's `code`/`status`/`retryable` are its contract.
  if (isRonLike(e)) {
    switch (e.code) {
      case 'NotFound':
        return ExitCode.NotFound
      case 'Unauthorized':
      case 'Forbidden':
      case 'Expired':
      case 'Revoked':
        return ExitCode.Auth
      case 'IntegrityFailed':
        return ExitCode.Integrity
      case 'Busy':
      case 'NotReady':
      case 'Draining':
      case 'Timeout':
      case 'BreakerOpen':
      case 'Brownout':
      case 'Unavailable':
      case 'Canceled':
      case 'Closed':
        return ExitCode.Unavailable
      case 'Malformed':
        return ExitCode.Usage
      default:
        return networkCode(e) !== undefined ? ExitCode.Unavailable : ExitCode.Error
    }
  }
  if (networkCode(e) !== undefined) return ExitCode.Unavailable
  return ExitCode.Error
}

/** The one-line message printed for an error: its message, plus the network code when there is one. */
export function describeError(e: unknown): string {
  if (e instanceof CliError) return e.message
  const code = (e as { code?: unknown } | null)?.code
  const text = e instanceof Error ? e.message : String(e)
  // Run from the sources of an unbuilt clone (bin/ron-node.js): a package's dist is missing.
  if (code === 'ERR_MODULE_NOT_FOUND' && /[/\\]dist[/\\]/.test(text)) {
    return 'the RON packages are not built: run `npm run build` in the repository root (or `npm start`), then try again'
  }
  const net = networkCode(e)
  const msg = e instanceof Error ? e.message : String(e)
  if (net !== undefined && !msg.includes(net)) return `${msg} (${net})`
  return msg.split('\n')[0] ?? msg
}
