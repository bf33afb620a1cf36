/**
 * The one config loader used by every service and the CLI: defaults < file < environment <
 * explicit overrides, validated by a zod schema, with errors that name the key and the
 * expected type.
 *
 * @module
 */

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { parse as ParseToml } from 'smol-toml'
import type { z } from 'zod'
import { ConfigError, describeValue } from './config-error.js'

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** A JSON file, or TOML when the name ends in `.toml`. @default no file */
  file?: string
  /** Environment variables to read. @default process.env */
  env?: Record<string, string | undefined>
  /** Prefix of the environment variables that are read. @default 'RON_' */
  envPrefix?: string
  /** Highest-precedence values (e.g. options passed to a factory). `undefined` leaves are ignored. */
  overrides?: object
  /** Lowest-precedence values, below the file. */
  defaults?: object
}

type Obj = Record<string, unknown>

/** @internal */
export function isPlainObject(v: unknown): v is Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const proto = Object.getPrototypeOf(v) as unknown
  return proto === Object.prototype || proto === null
}

/** Deep merge: plain objects merge key by key; anything else (arrays included) replaces. @internal */
export function merge(base: unknown, over: unknown): unknown {
  if (over === undefined) return base
  if (!isPlainObject(base) || !isPlainObject(over)) return isPlainObject(over) ? merge({}, over) : over
  const out: Obj = { ...base }
  for (const [k, v] of Object.entries(over)) {
    if (k === '__proto__' || k === 'constructor' || k === 'prototype') continue
    if (v === undefined) continue
    out[k] = merge(out[k], v)
  }
  return out
}

/** `MAX_OBJECT_BYTES` → `maxObjectBytes`. */
function camel(segment: string): string {
  return segment.toLowerCase().replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase())
}

// --- light zod introspection, used only to coerce environment strings --------------------------

interface Def {
  type?: string
  innerType?: ZodLike
  in?: ZodLike
  options?: ZodLike[]
  shape?: Record<string, ZodLike>
}
interface ZodLike {
  def?: Def
  _zod?: { def?: Def }
}

function defOf(s: ZodLike | undefined): Def | undefined {
  return s?._zod?.def ?? s?.def
}

/** Strips optional/default/nullable/readonly/pipe wrappers. */
function unwrap(s: ZodLike | undefined): ZodLike | undefined {
  for (let i = 0; i < 16 && s; i++) {
    const d = defOf(s)
    if (!d) return s
    if (d.innerType && ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch', 'nonoptional'].includes(d.type ?? '')) s = d.innerType
    else if (d.type === 'pipe' && d.in) s = d.in
    else return s
  }
  return s
}

function childSchema(s: ZodLike | undefined, key: string): ZodLike | undefined | null {
  const u = unwrap(s)
  const d = defOf(u)
  if (d?.type !== 'object') return null // not introspectable: accept the key
  const shape = d.shape ?? (u as { shape?: Record<string, ZodLike> }).shape
  return shape?.[key]
}

function leafTypes(s: ZodLike | undefined): string[] {
  const u = unwrap(s)
  const d = defOf(u)
  if (!d) return []
  if (d.type === 'union' && d.options) return d.options.flatMap((o) => leafTypes(o))
  return [d.type ?? 'unknown']
}

function coerceEnv(raw: string, s: ZodLike | undefined): unknown {
  const types = leafTypes(s)
  if (types.includes('string') || types.includes('enum') || types.includes('literal')) return raw
  if (types.includes('number') || types.includes('int') || types.includes('bigint')) {
    const t = raw.trim()
    return t !== '' && Number.isFinite(Number(t)) ? Number(t) : raw
  }
  if (types.includes('boolean')) {
    const t = raw.trim().toLowerCase()
    if (t === 'true' || t === '1') return true
    if (t === 'false' || t === '0') return false
    return raw
  }
  if (types.includes('array') || types.includes('object') || types.includes('record')) {
    const t = raw.trim()
    if (t.startsWith('[') || t.startsWith('{')) {
      try {
        return JSON.parse(t) as unknown
      } catch {
        return raw
      }
    }
    return types.includes('array') ? t.split(',').map((x) => x.trim()).filter((x) => x.length > 0) : raw
  }
  return raw
}

/**
 * Reads the variables named `<prefix><SEG>__<SEG>...` into a nested object. Each segment maps
 * to one key: `__` separates nesting levels and `_` inside a segment becomes camelCase, so
 * `RON_STORAGE__MAX_OBJECT_BYTES=64MiB` sets `storage.maxObjectBytes`. Variables that name no
 * key of `schema` are ignored (several services share the prefix); values are coerced to the
 * schema's leaf type (numbers, booleans, comma-separated or JSON arrays, JSON objects).
 */
export function configFromEnv(schema: z.ZodType, env: Record<string, string | undefined>, prefix = 'RON_'): Obj {
  const out: Obj = {}
  for (const name of Object.keys(env).sort()) {
    const value = env[name]
    // An empty variable (`RON_X=`) is unset, not an empty value: shells make those by accident.
    if (value === undefined || value === '' || !name.startsWith(prefix)) continue
    const segments = name.slice(prefix.length).split('__')
    if (segments.some((s) => s.length === 0)) continue
    const keys = segments.map(camel)
    let s: ZodLike | undefined | null = schema
    let known = true
    for (const k of keys) {
      const c: ZodLike | undefined | null = s === null ? null : childSchema(s ?? undefined, k)
      if (c === undefined) {
        known = false
        break
      }
      s = c
    }
    if (!known) continue
    let node = out
    for (const k of keys.slice(0, -1)) {
      if (!isPlainObject(node[k])) node[k] = {}
      node = node[k] as Obj
    }
    node[keys[keys.length - 1]!] = coerceEnv(value, s ?? undefined)
  }
  return out
}

/**
 * smol-toml's parser, loaded on the first TOML file: a process started without one (every
 * `ron-node start` without `--config x.toml`) does not load its nine modules. Its CommonJS build,
 * since the loader is synchronous.
 */
let tomlParser: typeof ParseToml | undefined
function parseToml(text: string): unknown {
  tomlParser ??= (createRequire(import.meta.url)('smol-toml') as { parse: typeof ParseToml }).parse
  return tomlParser(text)
}

function readConfigFile(file: string): unknown {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    throw new ConfigError(`cannot read config file ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { details: { file }, cause: e })
  }
  try {
    return file.toLowerCase().endsWith('.toml') ? parseToml(text) : (JSON.parse(text) as unknown)
  } catch (e) {
    throw new ConfigError(`config file ${file} is not valid ${file.toLowerCase().endsWith('.toml') ? 'TOML' : 'JSON'}: ${(e as Error).message}`, {
      details: { file },
      cause: e,
    })
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = (v as Record<PropertyKey, unknown>)[k]
  }
  return v
}

interface Issue {
  code: string
  path: PropertyKey[]
  message: string
  expected?: string
  keys?: string[]
}

function describeIssue(issue: Issue, input: unknown): { path: string; text: string; expected?: string; got?: string } {
  const path = issue.path.map(String).join('.')
  const got = valueAt(input, issue.path)
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = issue.keys ?? []
      const where = path === '' ? '' : `${path}.`
      return { path: keys.map((k) => where + k).join(', '), text: `unknown key${keys.length > 1 ? 's' : ''}` }
    }
    case 'invalid_type': {
      const expected = issue.expected ?? 'another type'
      return got === undefined
        ? { path, text: `required (expected ${expected})`, expected }
        : { path, text: `expected ${expected}, got ${describeValue(got)}`, expected, got: describeValue(got) }
    }
    default: {
      const msg = issue.message.startsWith('expected') ? issue.message : issue.message.charAt(0).toLowerCase() + issue.message.slice(1)
      return { path, text: `${msg}, got ${describeValue(got)}`, got: describeValue(got) }
    }
  }
}

/**
 * Validates `input` against `schema` and returns the parsed value.
 * @throws {@link ConfigError} naming each offending key path and the expected type.
 */
export function validateConfig<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  // Without zod's JIT: a config is validated once per start (and per reload), and generating the
  // `new Function` fast path of every object schema on first use cost ~100-185 ms of a five-service
  // start, against a few ms for the interpreted parse. Request-path schemas keep the JIT.
  const r = schema.safeParse(input, { jitless: true })
  if (r.success) return r.data
  const issues = (r.error.issues as unknown as Issue[]).map((i) => describeIssue(i, input))
  const lines = issues.map((i) => (i.path === '' ? i.text : `${i.path}: ${i.text}`))
  const first = issues[0]
  const message = lines.length <= 3 ? lines.join('; ') : `${lines.slice(0, 3).join('; ')}; and ${lines.length - 3} more`
  throw new ConfigError(message, {
    details: {
      path: first?.path ?? '',
      ...(first?.expected === undefined ? {} : { expected: first.expected }),
      ...(first?.got === undefined ? {} : { got: first.got }),
      issues: lines,
    },
  })
}

/**
 * Loads configuration: `defaults` < `file` < environment < `overrides`, deep-merged (objects
 * merge, arrays replace), then validated by `schema`. Make object schemas `z.strictObject` (or
 * `.strict()`) so unknown keys in files and overrides are rejected. Environment variables are
 * mapped as described in {@link configFromEnv}.
 *
 * @throws {@link ConfigError} when the file cannot be read or parsed, or the merged value does
 * not validate; the message reads like `storage.maxObjectBytes: expected a size like "64MiB", …, got "lots"`.
 * @example
 * ```ts
 * const schema = z.strictObject({
 *   storage: z.strictObject({ maxObjectBytes: sizeSchema.prefault('64MiB'), readTimeout: durationSchema.prefault('5s') }).prefault({}),
 * })
 * const cfg = loadConfig(schema, { file: 'ron.toml', env: process.env })
 * ```
 */
export function loadConfig<S extends z.ZodType>(schema: S, opts: LoadConfigOptions = {}): z.infer<S> {
  let merged: unknown = merge({}, opts.defaults ?? {})
  if (opts.file !== undefined) {
    const fromFile = readConfigFile(opts.file)
    if (!isPlainObject(fromFile)) throw new ConfigError(`config file ${opts.file} must hold an object`, { details: { file: opts.file } })
    merged = merge(merged, fromFile)
  }
  merged = merge(merged, configFromEnv(schema, opts.env ?? process.env, opts.envPrefix ?? 'RON_'))
  merged = merge(merged, opts.overrides ?? {})
  return validateConfig(schema, merged)
}
