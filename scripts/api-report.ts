/**
 * The API report: for every entry point of every workspace package (each key of its `exports`),
 * the exported names, and for each name its declaration as TypeScript emits it into the `.d.ts`
 * (comments stripped, printed by the compiler). One file per package, `packages/<dir>/api-report.md`,
 * so a changed signature is a diff in review. `packages/core/test/api-report.test.ts` compares the
 * committed files with what this module generates; `UPDATE_API_REPORT=1` rewrites them.
 *
 * One TypeScript program over every entry of every package (the sources, through the root
 * tsconfig's paths), and a declaration emit of just the files that declare an exported name.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

/** One entry point: `@ron/core/http` → `packages/core/src/http/index.ts`. */
export interface ApiEntry {
  /** The package's directory name under `packages/`. */
  dir: string
  /** The import specifier (`@ron/core`, `@ron/core/testing`). */
  name: string
  /** The source file behind the entry. */
  file: string
}

/** Every entry point of every workspace package, from the `exports` maps (`./dist/x.js` → `src/x.ts`). */
export function apiEntries(root: string): ApiEntry[] {
  const out: ApiEntry[] = []
  for (const dir of readdirSync(join(root, 'packages')).sort()) {
    const pkgFile = join(root, 'packages', dir, 'package.json')
    if (!existsSync(pkgFile)) continue
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { name: string; exports?: Record<string, { import?: string } | string> }
    for (const [key, target] of Object.entries(pkg.exports ?? { '.': './dist/index.js' })) {
      const dist = typeof target === 'string' ? target : target.import
      if (dist === undefined || !dist.endsWith('.js')) continue
      const src = join(root, 'packages', dir, dist.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'))
      if (!existsSync(src)) throw new Error(`${pkg.name}: exports["${key}"] → ${dist} has no source ${relative(root, src)}`)
      out.push({ dir, name: key === '.' ? pkg.name : `${pkg.name}${key.slice(1)}`, file: src })
    }
  }
  return out
}

/** The kind a report line shows for an exported symbol. */
function kindOf(f: ts.SymbolFlags): string {
  if (f & ts.SymbolFlags.Class) return 'class'
  if (f & ts.SymbolFlags.Function) return 'function'
  if (f & ts.SymbolFlags.Interface) return 'interface'
  if (f & ts.SymbolFlags.TypeAlias) return 'type'
  if (f & ts.SymbolFlags.Enum) return 'enum'
  if (f & ts.SymbolFlags.Variable) return 'const'
  if (f & ts.SymbolFlags.Module) return 'namespace'
  return 'other'
}

/** Case-insensitive order, then case-sensitive (stable across platforms). */
const byName = (a: string, b: string): number => {
  const la = a.toLowerCase()
  const lb = b.toLowerCase()
  return la < lb ? -1 : la > lb ? 1 : a < b ? -1 : a > b ? 1 : 0
}

/** The names a top-level statement of a `.d.ts` declares. */
function declaredNames(s: ts.Statement): string[] {
  if (ts.isVariableStatement(s)) return s.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []))
  if (
    (ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s) || ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s) || ts.isEnumDeclaration(s) || ts.isModuleDeclaration(s)) &&
    s.name !== undefined &&
    ts.isIdentifier(s.name)
  ) {
    return [s.name.text]
  }
  return []
}

/** The name a source declaration introduces (what to look for in its emitted `.d.ts`). */
function declarationName(d: ts.Declaration): string | undefined {
  const n = ts.getNameOfDeclaration(d)
  return n !== undefined && ts.isIdentifier(n) ? n.text : undefined
}

/** The top-level statement of a declaration file holding `d` (a variable's statement, an overload). */
function statementOf(d: ts.Node): ts.Node {
  let n: ts.Node = d
  while (n.parent !== undefined && !ts.isSourceFile(n.parent) && !ts.isModuleBlock(n.parent)) n = n.parent
  return n
}

/** What {@link buildApiReports} returns. */
export interface ApiReports {
  /** The report text per package directory (`core` → the contents of `packages/core/api-report.md`). */
  reports: Map<string, string>
  /** Every entry with the names it exports (for the TSDoc check). */
  exports: Map<string, { name: string; documented: boolean }[]>
}

/** The reports of every package, from one program over every entry point. */
export function buildApiReports(root: string): ApiReports {
  const list = apiEntries(root)
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), (p) => ts.sys.readFile(p))
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    declarationMap: false,
    sourceMap: false,
    outDir: join(root, '.api-report-virtual'),
    rootDir: root,
  }
  const program = ts.createProgram(
    list.map((e) => e.file),
    options,
  )
  const checker = program.getTypeChecker()
  const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed })

  // Declaration emit, one source file at a time and only for those that declare an export.
  const dtsOf = new Map<string, ts.SourceFile>()
  const emitted = (file: ts.SourceFile): ts.SourceFile => {
    const cached = dtsOf.get(file.fileName)
    if (cached !== undefined) return cached
    let text: string | undefined
    const result = program.emit(
      file,
      (name, data) => {
        if (name.endsWith('.d.ts')) text = data
      },
      undefined,
      true,
    )
    if (text === undefined) {
      const why = ts.formatDiagnostics(result.diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' })
      throw new Error(`no declarations emitted for ${relative(root, file.fileName)}\n${why}`)
    }
    const dts = ts.createSourceFile(file.fileName.replace(/\.ts$/, '.d.ts'), text, ts.ScriptTarget.Latest, true)
    dtsOf.set(file.fileName, dts)
    return dts
  }

  /** The declaration text of an exported symbol, as its `.d.ts` has it. */
  const declarationText = (target: ts.Symbol): string => {
    const parts: string[] = []
    const seen = new Set<ts.Node>()
    for (const d of target.declarations ?? []) {
      const sf = d.getSourceFile()
      if (ts.isSourceFile(d)) {
        parts.push(`// namespace: the module ${relative(root, sf.fileName)}`)
        continue
      }
      if (sf.isDeclarationFile) {
        const st = statementOf(d)
        if (!seen.has(st)) parts.push(printer.printNode(ts.EmitHint.Unspecified, st, sf))
        seen.add(st)
        continue
      }
      const name = declarationName(d)
      const dts = emitted(sf)
      for (const st of dts.statements) {
        if (seen.has(st) || name === undefined || !declaredNames(st).includes(name)) continue
        seen.add(st)
        parts.push(printer.printNode(ts.EmitHint.Unspecified, st, dts))
      }
    }
    if (parts.length === 0) throw new Error(`no declaration found for ${target.name}`)
    return parts.join('\n')
  }

  const reports = new Map<string, string>()
  const exports = new Map<string, { name: string; documented: boolean }[]>()
  const dirs = [...new Set(list.map((e) => e.dir))]
  for (const dir of dirs) {
    const entries = list.filter((e) => e.dir === dir)
    const pkgName = entries[0]!.name.split('/').slice(0, entries[0]!.name.startsWith('@') ? 2 : 1).join('/')
    const lines = [
      `# API report: \`${pkgName}\``,
      '',
      '<!-- Generated by packages/core/test/api-report.test.ts (scripts/api-report.ts). Do not edit. -->',
      '',
      'Every entry point of the package with its exported names, then each declaration as TypeScript',
      'emits it into the `.d.ts` (comments stripped). The test fails when the code and this file differ;',
      'after an intended change to a public API run',
      '`UPDATE_API_REPORT=1 npx vitest run packages/core/test/api-report.test.ts` and commit the diff.',
    ]
    const declarations = new Map<string, string[]>()
    for (const e of entries) {
      const sf = program.getSourceFile(e.file)
      const mod = sf === undefined ? undefined : checker.getSymbolAtLocation(sf)
      if (mod === undefined) throw new Error(`${e.name}: ${relative(root, e.file)} is not a module`)
      const names: string[] = []
      const documented: { name: string; documented: boolean }[] = []
      for (const s of checker.getExportsOfModule(mod)) {
        const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s
        names.push(`- \`${s.name}\` ${kindOf(target.flags)}`)
        documented.push({ name: s.name, documented: ts.displayPartsToString(target.getDocumentationComment(checker)).trim() !== '' })
        const text = declarationText(target)
        const known = declarations.get(s.name) ?? []
        if (!known.includes(text)) known.push(text)
        declarations.set(s.name, known)
      }
      exports.set(e.name, documented)
      names.sort(byName)
      lines.push('', `## \`${e.name}\` (${names.length})`, '', ...names)
    }
    lines.push('', '## Declarations')
    for (const name of [...declarations.keys()].sort(byName)) {
      for (const text of declarations.get(name)!) lines.push('', `### \`${name}\``, '', '```ts', text, '```')
    }
    reports.set(dir, `${lines.join('\n')}\n`)
  }
  return { reports, exports }
}

/**
 * A unified diff of two texts (`---` committed, `+++` generated), three lines of context, each
 * hunk labelled with the nearest `##`/`###` heading above it so a changed signature names its export.
 */
export function unifiedDiff(before: string, after: string, label: string): string {
  const a = before.split('\n')
  const b = after.split('\n')
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  // LCS over the differing middle only (small for a real change).
  const ma = a.slice(start, endA)
  const mb = b.slice(start, endB)
  const ops: { op: ' ' | '-' | '+'; text: string; ai: number }[] = []
  if (ma.length * mb.length > 25_000_000) {
    for (const [i, t] of ma.entries()) ops.push({ op: '-', text: t, ai: start + i })
    for (const t of mb) ops.push({ op: '+', text: t, ai: endA })
  } else {
    const w = mb.length + 1
    const lcs = new Uint32Array((ma.length + 1) * w)
    for (let i = ma.length - 1; i >= 0; i--) {
      for (let j = mb.length - 1; j >= 0; j--) {
        lcs[i * w + j] = ma[i] === mb[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!)
      }
    }
    let i = 0
    let j = 0
    while (i < ma.length || j < mb.length) {
      if (i < ma.length && j < mb.length && ma[i] === mb[j]) {
        ops.push({ op: ' ', text: ma[i]!, ai: start + i })
        i++
        j++
      } else if (i < ma.length && (j === mb.length || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) {
        ops.push({ op: '-', text: ma[i]!, ai: start + i })
        i++
      } else {
        ops.push({ op: '+', text: mb[j]!, ai: start + i })
        j++
      }
    }
  }
  const ctx = 3
  const all = [
    ...a.slice(Math.max(0, start - ctx), start).map((text, k) => ({ op: ' ' as const, text, ai: Math.max(0, start - ctx) + k })),
    ...ops,
    ...a.slice(endA, endA + ctx).map((text, k) => ({ op: ' ' as const, text, ai: endA + k })),
  ]
  const heading = (ai: number): string => {
    for (let k = Math.min(ai, a.length - 1); k >= 0; k--) if (/^##+ /.test(a[k]!)) return a[k]!
    return ''
  }
  const out = [`--- ${label} (committed)`, `+++ ${label} (generated)`]
  let k = 0
  while (k < all.length) {
    while (k < all.length && all[k]!.op === ' ') k++
    if (k >= all.length) break
    const from = Math.max(0, k - ctx)
    let to = k
    // Extend the hunk while changes are within 2×ctx lines of each other.
    for (let n = k; n < all.length; n++) {
      if (all[n]!.op !== ' ') to = n
      else if (n - to > 2 * ctx) break
    }
    const end = Math.min(all.length, to + ctx + 1)
    out.push(`@@ line ${all[from]!.ai + 1} @@ ${heading(all[k]!.ai)}`)
    for (const o of all.slice(from, end)) out.push(`${o.op}${o.text}`)
    k = end
  }
  return out.join('\n')
}
