/**
 * `docs/errors.md`'s `details.reason` tables against the sources, both ways: every reason the
 * code can put in an error envelope is documented (with its code where the source shows it), and
 * every documented reason is one the code can produce.
 *
 * The reasons are read from `packages/*\/src/**\/*.ts` (not `src/testing/`). Files are named
 * `<package>/<file name>` (`core/pace.ts`), so moving a file within its package changes nothing here. A reason is written
 * either as a literal in an error's details (`details: { reason: 'max_rps' }`, or a ternary of two
 * literals), or as an expression; every expression site must be declared in {@link EMITTERS} with
 * where its values come from (a string-literal union type, the literal arguments of a helper, a
 * dynamic value documented in prose), so a new `details: { reason: x }` fails here until it is
 * declared. {@link NOT_ON_THE_WIRE} lists the details that never reach a client.
 */
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ErrorCodes } from '@ron/core'
import { parseErrorCatalog, readRepoFile, repoPath, repoRoot } from '@ron/core/testing'

type Source = { type: string; in: string } | { literals: RegExp; in?: string } | { dynamic: RegExp }
interface Emitter {
  /** The code its errors carry, when one. */
  code?: string
  /** Where the values come from (each must yield at least one, or the doc must match `dynamic`). */
  values: Source[]
}

/** Expression sites of `details.reason`, by `<package>/<file name>: expression`. */
const EMITTERS: Record<string, Emitter> = {
  'core/disk-fault.ts: reason': { code: 'NotReady', values: [{ type: 'DiskFaultReason', in: 'core/disk-fault.ts' }] },
  'core/verifier.ts: reason': { code: 'Unauthorized', values: [{ type: 'UnauthorizedReason', in: 'core/verifier.ts' }] },
  'core/pace.ts: reason': { code: 'RequestTimeout', values: [{ literals: /#fail\(reason: ((?:'\w+'(?: \| )?)+)/g }] },
  'core/serve.ts: reason': { code: 'Busy', values: [{ literals: /answerOverCap = \(res: ServerResponse, reason: ((?:'\w+'(?: \| )?)+)\)/g }] },
  'core/admission.ts: reason': { code: 'Busy', values: [{ literals: /#busy\(key: string, why: string, reason: ((?:'\w+'(?: \| )?)+),/g }] },
  // Dynamic: the JSON parser's message, zlib's error code, Node's HTTP parser code (documented in prose).
  "core/context.ts: e instanceof Error ? e.message : 'parse error'": { code: 'Malformed', values: [{ dynamic: /JSON parser's message/ }] },
  'core/body.ts: code': { code: 'Malformed', values: [{ dynamic: /zlib's error code \(`Z_DATA_ERROR`/ }] },
  'core/client-error.ts: code': { code: 'Malformed', values: [{ dynamic: /parser's code \(`HPE_INVALID_METHOD`/ }] },
  'index/manifest-fetch.ts: reason': { code: 'InvalidReference', values: [{ literals: /\binvalid\(\w+, '(\w+)'/g }] },
  'index/resolver.ts: reason': { code: 'NotFound', values: [{ literals: /\bnotFound\([\w.]+, (?:[^'()]*\? )?'(\w+)'(?: : '(\w+)')?/g }] },
  'interop/site.ts: reason': { code: 'InvalidReference', values: [{ literals: /\bnotAManifest\([\w.]+, '(\w+)'/g }] },
  'interop/dedupe-journal.ts: this.#fault': { code: 'NotReady', values: [{ type: 'DiskFaultReason', in: 'core/disk-fault.ts' }] },
  'interop/webhooks.ts: fault': { code: 'NotReady', values: [{ type: 'DiskFaultReason', in: 'core/disk-fault.ts' }] },
  // refusalBody writes the 401 envelope text itself ("reason":"${reason}").
  'interop/webhooks.ts: "${reason}"': { code: 'Unauthorized', values: [{ type: 'WebhookFailureReason', in: 'interop/verify.ts' }] },
  'passport/nodes.ts: reason': { code: 'Unauthorized', values: [{ literals: /\breject\('(\w+)'/g }] },
  'registry/write-health.ts: reason': {
    code: 'NotReady',
    values: [{ literals: /setDisk\(false, '(\w+)'\)|this\.#disk \?\? '(\w+)'/g }, { type: 'DiskFaultReason', in: 'core/disk-fault.ts' }],
  },
  'registry/witness.ts: reason': { code: 'IntegrityFailed', values: [{ literals: /\bbad\('(\w+)'/g }] },
  'registry/segment.ts: reason': { code: 'NotReady', values: [{ literals: /diskFaultReason\(u\.cause\) \?\? '(\w+)'/g }, { type: 'DiskFaultReason', in: 'core/disk-fault.ts' }] },
  'storage/fs.ts: problem': { code: 'IntegrityFailed', values: [{ type: 'TableProblem', in: 'storage/integrity.ts' }] },
  'storage/memory.ts: table': { code: 'IntegrityFailed', values: [{ type: 'TableProblem', in: 'storage/integrity.ts' }] },
  'storage/objects.ts: s.disk.reason': {
    code: 'NotReady',
    values: [{ literals: /this\.set\(false, (?:r\.reason \?\? )?'(\w+)'\)|reason \?\? '(\w+)'/g, in: 'storage/disk-watch.ts' }, { type: 'DiskFaultReason', in: 'core/disk-fault.ts' }],
  },
}

/**
 * Literal reasons in details that never reach a client, by `<package>/<file name>: reason`, and why: a peer's
 * answer the index refuses is that peer failing (the resolver moves on; the client sees
 * `peers_unavailable`); passport's registry sync runs in the background and its failure is the
 * reason of the `registry` readiness path.
 */
const NOT_ON_THE_WIRE: Record<string, string> = {
  'passport/registry-sync.ts: registry_unreachable': 'the registry sync failed: a readiness reason, not an answer',
  'passport/registry-sync.ts: registry_invalid': 'the registry sync read an invalid answer: a readiness reason, not an answer',
  'index/peer-client.ts: too_large': 'a peer answer over 2 MiB: the peer counts as failed',
  'index/peer-client.ts: not_json': 'a peer answer that is not JSON: the peer counts as failed',
}

let listed: string[] | undefined
function sources(): string[] {
  if (listed !== undefined) return listed
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name)
      if (e.isDirectory()) {
        if (e.name !== 'testing') walk(p)
      } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(relative(repoRoot(), p))
    }
  }
  for (const pkg of readdirSync(repoPath('packages'))) walk(repoPath(`packages/${pkg}/src`))
  return (listed = out.sort())
}

/** `packages/core/src/http/pace.ts` → `core/pace.ts`. */
const short = (file: string): string => file.replace(/^packages\/([\w-]+)\/src\/(?:[\w-]+\/)*/, '$1/')

/** The one source file named by `core/pace.ts` (a type's home). */
function sourceOf(name: string): string {
  const found = sources().filter((f) => short(f) === name)
  expect(found, `one source file is ${name}`).toHaveLength(1)
  return found[0]!
}

/** The source with comments blanked (newlines kept), so an example in TSDoc is not a site. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/^\s*\/\/.*$/gm, '')
}

/** `XyzError` → its wire code (`ConfigError` is a `Malformed`). */
function codeOfClass(cls: string | undefined): string | undefined {
  if (cls === undefined) return undefined
  if (cls === 'ConfigError') return 'Malformed'
  const code = cls.replace(/Error$/, '')
  return code in ErrorCodes ? code : undefined
}

/** The file each expression site was seen in, by site key. */
const sitePaths = new Map<string, string>()

function valuesOf(source: Source, site: string): string[] {
  if ('dynamic' in source) return []
  if ('type' in source) {
    const text = readRepoFile(sourceOf(source.in))
    const m = new RegExp(`type ${source.type} =((?:\\s*\\|?\\s*'\\w+')+)`).exec(text)
    expect(m, `${site}: type ${source.type} in ${source.in}`).not.toBeNull()
    return [...m![1]!.matchAll(/'(\w+)'/g)].map((x) => x[1]!)
  }
  const text = readRepoFile(source.in === undefined ? sitePaths.get(site)! : sourceOf(source.in))
  const found = [...text.matchAll(source.literals)].flatMap((m) => m.slice(1).filter((x): x is string => x !== undefined).flatMap((g) => [...`${g.includes("'") ? g : `'${g}'`}`.matchAll(/'(\w+)'/g)].map((x) => x[1]!)))
  expect(found.length, `${site}: ${String(source.literals)} finds its literals`).toBeGreaterThan(0)
  return found
}

interface Found {
  /** `Code:reason`, or `?:reason` when the code is not visible at the site. */
  key: string
  where: string
}

/** Every `details.reason` the sources can emit, and the expression sites seen. */
function scan(): { found: Found[]; sites: Set<string>; dropped: Set<string> } {
  const found: Found[] = []
  const sites = new Set<string>()
  const dropped = new Set<string>()
  for (const path of sources()) {
    const file = short(path)
    const text = withoutComments(readRepoFile(path))
    const lineOf = (i: number): number => text.slice(0, i).split('\n').length
    for (const m of text.matchAll(/\bdetails: \{[^{}]*?\breason\b(?:: ([^,}]+))?/g)) {
      const expr = (m[1] ?? 'reason').trim()
      const literals = /^'(\w+)'$/.exec(expr)?.slice(1) ?? /^.*?\? '(\w+)' : '(\w+)'$/.exec(expr)?.slice(1)
      if (literals === undefined) {
        sites.add(`${file}: ${expr}`)
        sitePaths.set(`${file}: ${expr}`, path)
        continue
      }
      const before = text.slice(Math.max(0, m.index - 400), m.index)
      // The statement: after the last line that ends one (a ';' inside a message does not count).
      const ends = [...before.matchAll(/;[ \t]*\n/g)]
      const statement = before.slice(ends.length === 0 ? 0 : ends[ends.length - 1]!.index + 1)
      const code = codeOfClass([...statement.matchAll(/new (\w+Error)\(/g)].pop()?.[1])
      for (const reason of literals) {
        if (`${file}: ${reason}` in NOT_ON_THE_WIRE) {
          dropped.add(`${file}: ${reason}`)
          continue
        }
        found.push({ key: `${code ?? '?'}:${reason}`, where: `${file}:${lineOf(m.index)}` })
      }
    }
    for (const m of text.matchAll(/"reason":"(\$\{\w+\})"/g)) {
      sites.add(`${file}: "${m[1]}"`)
      sitePaths.set(`${file}: "${m[1]}"`, path)
    }
  }
  for (const [site, e] of Object.entries(EMITTERS)) {
    if (!sites.has(site)) continue
    for (const s of e.values) for (const reason of valuesOf(s, site)) found.push({ key: `${e.code ?? '?'}:${reason}`, where: site })
  }
  return { found, sites, dropped }
}

const doc = readRepoFile('docs/errors.md')
const documented = parseErrorCatalog(doc).reasons
const { found, sites, dropped } = scan()

describe('docs/errors.md: details.reason against the sources', () => {
  it('every expression site of details.reason is declared (with where its values come from)', () => {
    expect([...sites].sort()).toEqual(Object.keys(EMITTERS).sort())
  })

  it('what NOT_ON_THE_WIRE excludes is still in the sources', () => {
    expect([...dropped].sort()).toEqual(Object.keys(NOT_ON_THE_WIRE).sort())
  })

  it('the dynamic reasons are described in the prose', () => {
    for (const [site, e] of Object.entries(EMITTERS)) for (const s of e.values) if ('dynamic' in s) expect(doc, site).toMatch(s.dynamic)
  })

  it('every reason the code can emit is documented (with its code when the source names it)', () => {
    const docReasons = new Set([...documented].map((k) => k.slice(k.indexOf(':') + 1)))
    const missing = found.filter((f) => (f.key.startsWith('?:') ? !docReasons.has(f.key.slice(2)) : !documented.has(f.key)))
    expect(missing.map((f) => `${f.key} (${f.where})`)).toEqual([])
  })

  it('every documented reason is one the code can emit', () => {
    const keys = new Set(found.map((f) => f.key))
    const codeless = new Set(found.filter((f) => f.key.startsWith('?:')).map((f) => f.key.slice(2)))
    const stale = [...documented].filter((k) => !keys.has(k) && !codeless.has(k.slice(k.indexOf(':') + 1)))
    expect(stale.sort()).toEqual([])
  })
})
