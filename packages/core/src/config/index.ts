/**
 * Configuration loading: defaults < file < environment (`RON_…`) < overrides, zod-validated,
 * with durations (`"5s"`) and sizes (`"64KiB"`).
 *
 * @module @ron/core/config
 */

export { ConfigError } from './config-error.js'
export { parseDuration, parseSize, durationSchema, sizeSchema } from './units.js'
export { loadConfig, validateConfig, configFromEnv } from './load.js'
export type { LoadConfigOptions } from './load.js'
export { redactConfig, REDACTED } from './redact.js'
