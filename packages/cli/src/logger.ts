/**
 * The node's logger: pino JSON lines on stderr, or pino-pretty when stderr is a terminal.
 *
 * @module
 */

import { pino, type Logger as PinoLogger } from 'pino'

/** Log levels accepted by `--log-level`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number]

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** @default 'info' */
  level?: LogLevel
  /** Human-readable output. @default true when stderr is a TTY */
  pretty?: boolean
  /** Where lines go. @default process.stderr (file descriptor 2) */
  destination?: NodeJS.WritableStream
  /** Constant fields on every line. @default { name: 'ron-node' } */
  base?: Record<string, unknown>
}

/**
 * Creates the node logger. Writes are synchronous so that nothing is lost when the process exits
 * right after a shutdown.
 *
 * @example
 * ```ts
 * const log = await createLogger({ level: 'debug' })
 * log.info({ port: 7701 }, 'storage listening')
 * ```
 */
export async function createLogger(options: CreateLoggerOptions = {}): Promise<PinoLogger> {
  const level = options.level ?? 'info'
  const usePretty = options.pretty ?? process.stderr.isTTY
  const base = options.base ?? { name: 'ron-node' }
  if (usePretty) {
    // Loaded only when used: pino-pretty is not needed for JSON output.
    const { default: pretty } = await import('pino-pretty')
    const stream = pretty({
      destination: options.destination ?? 2,
      sync: true,
      colorize: options.destination === undefined ? process.stderr.isTTY : false,
      ignore: 'pid,hostname',
      translateTime: 'SYS:HH:MM:ss.l',
    })
    return pino({ level, base }, stream)
  }
  const dest = options.destination ?? pino.destination({ fd: 2, sync: true })
  return pino({ level, base }, dest)
}
