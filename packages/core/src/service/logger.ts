/**
 * The logging interface services take. It is the pino-compatible subset RON uses, so a pino
 * logger can be passed as is; libraries never write to the console.
 *
 * @module
 */

/** One log method: `log({ corrId }, 'message')` or `log('message')`. */
export type LogFn = (objOrMsg: object | string, msg?: string) => void

/**
 * A structured logger (a subset of pino's interface).
 *
 * @example
 * ```ts
 * import pino from 'pino'
 * const logger: Logger = pino()
 * logger.child({ service: 'storage' }).info({ size: 42 }, 'stored')
 * ```
 */
export interface Logger {
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  /** A logger that adds `bindings` to every record. */
  child(bindings: Record<string, unknown>): Logger
}

const noop = (): void => {}

/** A {@link Logger} that discards everything; the default when no logger is given. */
export const noopLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => noopLogger,
}
