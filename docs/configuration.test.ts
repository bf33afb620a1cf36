/**
 * `docs/configuration.md` is generated from the config schemas (ron-node's and each service's)
 * and this test fails when it is out of date. Regenerate with
 * `UPDATE_DOCS=1 npx vitest run docs/configuration.test.ts`.
 *
 * Types, defaults and bounds come from `z.toJSONSchema` (input side); the one-line descriptions
 * (and defaults the JSON Schema cannot carry, such as those behind a preprocess) come from the
 * TSDoc comment above each key in the schema's source file, or from the key's own `.describe()`
 * where one name is used for several keys (interop's upstreams).
 */

import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { serviceBaseSchema } from '@ron/core'
import { indexConfigSchema } from '@ron/index'
import { interopConfigSchema } from '@ron/interop'
import { passportConfigSchema } from '@ron/passport'
import { registryConfigSchema } from '@ron/registry'
import { storageConfigSchema } from '@ron/storage'
import { nodeConfigSchema } from '../packages/cli/src/config.js'

const root = (p: string): string => fileURLToPath(new URL(`../${p}`, import.meta.url))
const DOC = root('docs/configuration.md')

interface Section {
  title: string
  schema: z.ZodType
  source: string
  intro: string
  /** Environment variable prefix of this section's keys, when read from the environment. */
  env?: string
  /** Where in `source` the documented keys start (the schema's own code, past types that repeat the key names). */
  from?: string
}

/** The base keys every service config spreads (core's `serviceBaseShape()`), documented once. */
const BASE_KEYS = Object.keys(serviceBaseSchema.shape)

const SECTIONS: Section[] = [
  {
    title: 'ron-node (`ron-node start`)',
    schema: nodeConfigSchema,
    source: 'packages/cli/src/config.ts',
    env: 'RON_',
    intro:
      'Read from built-in defaults < `--config file` (JSON or TOML) < `RON_*` environment < flags. A key `a.b` is `[a] b = …` in TOML, `RON_A__B` in the environment (`_` between words of one key, `__` between levels), and most top-level keys have a flag (`--port-base`); see `ron-node start --help`. The `passport`, `registry`, `index` and `interop` sections are passed to those services and take the keys of their tables below; `storage` takes the subset listed here.',
  },
  {
    title: 'Base keys of every service',
    schema: serviceBaseSchema,
    source: 'packages/core/src/service/base-config.ts',
    from: 'function httpShape(',
    intro:
      "Core's base config (the service contract, [service-contract.md](service-contract.md)): every service's schema spreads `serviceBaseShape()`, so these keys are the same in each service's config (and in its `[service]` section of a node). A service may change a default; its table says which. Reloadable: the slow-client rules (`http.minBytesPerSec`, `rateWindowMs`, `requestTimeoutMs`, `maxBodiesPerPrincipal`), `http.maxInflight`, `http.maxRps`, `cors`, `drainDeadlineMs`, `drainReadWindowMs`; the other `http.*` keys need a restart (`BASE_IMMUTABLE_KEYS`).",
  },
  { title: 'storage (`createStorageService`)', schema: storageConfigSchema, source: 'packages/storage/src/config.ts', intro: 'The embedding config of `@ron/storage`.' },
  { title: 'registry (`createRegistryService`, `[registry]`)', schema: registryConfigSchema, source: 'packages/registry/src/config.ts', intro: 'The config of `@ron/registry`; also the `[registry]` section of a node.' },
  { title: 'passport (`createPassportService`, `[passport]`)', schema: passportConfigSchema, source: 'packages/passport/src/config.ts', intro: 'The config of `@ron/passport`; also the `[passport]` section of a node.' },
  { title: 'index (`createIndexService`, `[index]`)', schema: indexConfigSchema, source: 'packages/index/src/config.ts', intro: 'The config of `@ron/index`; also the `[index]` section of a node.' },
  { title: 'interop (`createInteropService`, `[interop]`)', schema: interopConfigSchema, source: 'packages/interop/src/config.ts', intro: 'The config of `@ron/interop`; also the `[interop]` section of a node.' },
]

interface Doc {
  text: string
  default?: string
}

/** key → its TSDoc, for keys documented exactly one way in the file (ambiguous names are left out). */
function tsdocByKey(source: string, from?: string): Map<string, Doc> {
  const full = readFileSync(root(source), 'utf8')
  const text = from === undefined ? full : full.slice(Math.max(0, full.indexOf(from)))
  const seen = new Map<string, Doc | null>()
  const re = /\/\*\*((?:[^*]|\*(?!\/))*)\*\/\s*\n\s*(['"]?)([A-Za-z_$][\w$]*)\2\??\s*:/g
  for (const m of text.matchAll(re)) {
    const lines = m[1]!
      .split('\n')
      .map((l) => l.replace(/^\s*\*\s?/, '').trim())
      .join(' ')
      .trim()
    const dm = /@default\s+(.*?)(?=\s@\w|$)/.exec(lines)
    const body = lines.replace(/@\w+.*$/, '').trim()
    const doc: Doc = { text: body, ...(dm ? { default: dm[1]!.trim() } : {}) }
    const key = m[3]!
    const prev = seen.get(key)
    if (prev === undefined) seen.set(key, doc)
    else if (prev !== null && (prev.text !== doc.text || prev.default !== doc.default)) seen.set(key, null)
  }
  // A key written more often than documented (the same name in several objects) is ambiguous too.
  const documented = new Map<string, number>()
  for (const m of text.matchAll(re)) documented.set(m[3]!, (documented.get(m[3]!) ?? 0) + 1)
  // A key whose line carries its own `.describe()` takes its description from there, not from TSDoc.
  const written = (key: string): number => [...text.matchAll(new RegExp(`^\\s*['"]?${key}['"]?\\??\\s*:(?!.*\\.describe\\()`, 'gm'))].length
  const out = new Map<string, Doc>()
  for (const [k, v] of seen) if (v !== null && written(k) <= (documented.get(k) ?? 0)) out.set(k, v)
  return out
}

type Json = Record<string, unknown>

/** A `.describe()` text read like a TSDoc comment: the text, and its `@default` if it has one. */
function describedDoc(description: string): Doc {
  const dm = /@default\s+(.*?)(?=\s@\w|$)/.exec(description)
  return { text: description.replace(/@\w+.*$/, '').trim(), ...(dm ? { default: dm[1]!.trim() } : {}) }
}

function typeOf(s: Json): string {
  if (Array.isArray(s['enum'])) return (s['enum'] as unknown[]).map((v) => JSON.stringify(v)).join(' \\| ')
  if ('const' in s) return JSON.stringify(s['const'])
  const alts = (s['anyOf'] ?? s['oneOf']) as Json[] | undefined
  if (alts !== undefined) return alts.map(typeOf).join(' \\| ')
  const t = s['type']
  if (t === 'array') {
    const item = typeOf((s['items'] as Json | undefined) ?? {})
    return item.includes(' \\| ') ? `(${item})[]` : `${item}[]`
  }
  if (t === 'object') return s['properties'] === undefined ? 'table' : 'object'
  if (Array.isArray(t)) return t.join(' \\| ')
  return typeof t === 'string' ? t : 'any'
}

function bounds(s: Json): string {
  const parts: string[] = []
  const num = (k: string, sym: string): void => {
    const v = s[k]
    if (typeof v === 'number' && Math.abs(v) < Number.MAX_SAFE_INTEGER) parts.push(`${sym} ${v}`)
  }
  num('minimum', '≥')
  num('exclusiveMinimum', '>')
  num('maximum', '≤')
  num('exclusiveMaximum', '<')
  num('minLength', 'length ≥')
  num('maxLength', 'length ≤')
  num('minItems', 'items ≥')
  num('maxItems', 'items ≤')
  return parts.join(', ')
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

interface Row {
  path: string
  type: string
  default: string
  notes: string
  description: string
}

function rows(schema: Json, docs: Map<string, Doc>, prefix = ''): Row[] {
  const props = (schema['properties'] ?? {}) as Record<string, Json>
  const required = new Set((schema['required'] as string[] | undefined) ?? [])
  const out: Row[] = []
  for (const [key, s] of Object.entries(props)) {
    const path = prefix === '' ? key : `${prefix}.${key}`
    // The schema's own `.describe()` (its `@default` read as in TSDoc), else the TSDoc above the key.
    const doc = typeof s['description'] === 'string' ? describedDoc(s['description']) : docs.get(key)
    const dflt = 'default' in s ? `\`${JSON.stringify(s['default'])}\`` : doc?.default !== undefined ? cell(doc.default) : required.has(key) ? 'required' : ''
    const nested = s['type'] === 'object' && s['properties'] !== undefined && Object.keys(s['properties'] as object).length > 0
    out.push({ path, type: nested ? 'object' : typeOf(s).replace(/\|/g, '\\|').replace(/\\\\\|/g, '\\|'), default: dflt, notes: bounds(s), description: cell(doc?.text ?? (typeof s['description'] === 'string' ? s['description'] : '')) })
    if (nested) out.push(...rows(s, docs, path))
  }
  return out
}

const envName = (prefix: string, path: string): string => prefix + path.split('.').map((seg) => seg.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('__')

/** Leaf values of a parsed config, by dotted path. */
function leaves(v: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) leaves(x, prefix === '' ? k : `${prefix}.${k}`, out)
  } else out.set(prefix, v)
  return out
}

/** The line of a service section that points at the base table, with the defaults it changes. */
function baseNote(shape: Record<string, z.ZodType>): string {
  const own = leaves(z.strictObject(Object.fromEntries(BASE_KEYS.map((k) => [k, shape[k]!]))).parse({}))
  const base = leaves(serviceBaseSchema.parse({}))
  const changed = [...own].filter(([k, v]) => base.get(k) !== v).map(([k, v]) => `\`${k}\` = ${JSON.stringify(v)}`)
  return `Plus the [base keys](#base-keys-of-every-service) (\`http.*\`, \`cors\`, \`drainDeadlineMs\`, \`drainReadWindowMs\`)${changed.length === 0 ? '.' : `, with these defaults of its own: ${changed.join(', ')}.`}`
}

/** The whole of `docs/configuration.md`, generated. */
export function generateConfigurationDoc(): string {
  const parts: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated by docs/configuration.test.ts from the config schemas; do not edit by hand.',
    '     Regenerate: UPDATE_DOCS=1 npx vitest run docs/configuration.test.ts -->',
    '',
    'Every table lists each key with its type (as written in a file: sizes such as `"64MiB"` and durations such as `"30s"` are also accepted where the type says `string`), its default, its bounds and what it does. Unknown keys are errors naming the key. See [operations.md](operations.md) for how configuration is loaded and reloaded.',
    '',
  ]
  for (const section of SECTIONS) {
    const json = z.toJSONSchema(section.schema, { io: 'input', unrepresentable: 'any' }) as Json
    const docs = tsdocByKey(section.source, section.from)
    const env = section.env
    // A service schema that spreads the base keys: those are documented once, in the base table.
    const shape = (section.schema as { shape?: Record<string, z.ZodType> }).shape ?? {}
    const extendsBase = section.schema !== serviceBaseSchema && BASE_KEYS.every((k) => k in shape)
    parts.push(`## ${section.title}`, '', section.intro, '')
    if (extendsBase) parts.push(baseNote(shape), '')
    parts.push(`Source: \`${section.source}\``, '')
    parts.push(env === undefined ? '| key | type | default | bounds | description |' : '| key | environment | type | default | bounds | description |')
    parts.push(env === undefined ? '|---|---|---|---|---|' : '|---|---|---|---|---|---|')
    for (const r of rows(json, docs)) {
      if (extendsBase && BASE_KEYS.includes(r.path.split('.')[0]!)) continue
      const envCell = env === undefined ? '' : r.type === 'object' ? ' |' : ` \`${envName(env, r.path)}\` |`
      parts.push(`| \`${r.path}\` |${envCell} ${r.type} | ${r.default} | ${r.notes} | ${r.description} |`)
    }
    parts.push('')
  }
  return parts.join('\n')
}

describe('docs/configuration.md', () => {
  it('matches the config schemas (UPDATE_DOCS=1 regenerates it)', () => {
    const generated = generateConfigurationDoc()
    if (process.env['UPDATE_DOCS'] === '1') writeFileSync(DOC, generated)
    const current = readFileSync(DOC, 'utf8')
    expect(current, 'docs/configuration.md is out of date: run UPDATE_DOCS=1 npx vitest run docs/configuration.test.ts').toBe(generated)
  })

  it('documents every top-level ron-node key, including tls', () => {
    const doc = generateConfigurationDoc()
    for (const key of Object.keys(nodeConfigSchema.shape)) expect(doc).toContain(`| \`${key}\` |`)
    expect(doc).toContain('`RON_TLS__CERT`')
  })
})
