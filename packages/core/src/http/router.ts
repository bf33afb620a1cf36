/**
 * Route table: compiled once at startup, matched on every request without allocation for static
 * paths. Static paths are a `Map` lookup; parametrised paths are matched segment by segment.
 *
 * @module
 */

import { MalformedError, RonUsageError } from '../errors.js'
import type { Route } from './types.js'

/** Methods that change state and therefore must declare `scope` or `public: true`. */
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Thrown at startup when the route table is invalid (unscoped write route, duplicate, bad pattern). */
export class RouteConfigError extends RonUsageError {
  constructor(message: string) {
    super('RON_ROUTE_CONFIG', message)
    this.name = 'RouteConfigError'
  }
}

/** A route with its precomputed metric label. @internal */
export interface CompiledRoute {
  readonly route: Route
  /** `route.name ?? route.path`. */
  readonly label: string
  /** Per path segment: this route's param name, or `undefined` for a literal segment. */
  readonly names: readonly (string | undefined)[]
}

/** All routes sharing one path pattern. */
interface PathEntry {
  readonly methods: Map<string, CompiledRoute>
  /** Value of the `Allow` header for this path. */
  allow: string
  /** Precomputed match results for static paths, by method (HEAD falls back to GET). */
  readonly found: Map<string, RouteMatch>
  /** Precomputed 405 result. */
  notAllowed: RouteMatch
}

interface ParamPattern {
  readonly segments: readonly string[]
  /** For each segment: whether it is a parameter. */
  readonly isParam: readonly boolean[]
  readonly entry: PathEntry
}

/** Result of {@link Router.match}. */
export type RouteMatch =
  | { kind: 'found'; route: CompiledRoute; params: Record<string, string>; head: boolean }
  | { kind: 'method'; allow: string }
  | { kind: 'none' }

const NO_PARAMS: Record<string, string> = Object.freeze({})
const NONE: RouteMatch = { kind: 'none' }

/**
 * Compiled route table. Construct once; {@link Router.match} is the hot path.
 * @internal
 */
export class Router {
  private readonly statics = new Map<string, PathEntry>()
  private readonly patterns: ParamPattern[] = []

  /**
   * @throws {@link RouteConfigError} for a write route without `scope`/`public`, a duplicate
   * method+path, or a malformed path pattern.
   */
  constructor(routes: readonly Route[]) {
    const byPattern = new Map<string, PathEntry>()
    for (const route of routes) {
      const where = `${route.method} ${route.path}`
      if (typeof route.path !== 'string' || !route.path.startsWith('/')) {
        throw new RouteConfigError(`route ${where}: path must start with '/'`)
      }
      if (WRITE_METHODS.has(route.method) && route.scope === undefined && route.public !== true) {
        throw new RouteConfigError(`route ${where}: a write route must declare a scope or public: true`)
      }
      if (typeof route.handler !== 'function') throw new RouteConfigError(`route ${where}: handler is not a function`)
      const segments = route.path.split('/')
      const names = segments.map((seg) => {
        if (!seg.startsWith(':')) return undefined
        const name = seg.slice(1)
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new RouteConfigError(`route ${where}: bad param name '${name}'`)
        return name
      })
      // Normalise the pattern so `/o/:a` and `/o/:b` are recognised as the same path.
      const shape = segments.map((seg, i) => (names[i] === undefined ? seg : ':')).join('/')
      let entry = byPattern.get(shape)
      if (entry === undefined) {
        entry = { methods: new Map(), allow: '', found: new Map(), notAllowed: { kind: 'none' } }
        byPattern.set(shape, entry)
        if (names.some((n) => n !== undefined)) this.patterns.push({ segments, isParam: names.map((n) => n !== undefined), entry })
        else this.statics.set(route.path, entry)
      }
      if (entry.methods.has(route.method)) throw new RouteConfigError(`route ${where}: duplicate route`)
      entry.methods.set(route.method, { route, label: route.name ?? route.path, names })
    }
    for (const entry of byPattern.values()) {
      const allow = new Set(entry.methods.keys())
      if (allow.has('GET')) allow.add('HEAD')
      entry.allow = [...allow].sort().join(', ')
      entry.notAllowed = { kind: 'method', allow: entry.allow }
      for (const [method, route] of entry.methods) entry.found.set(method, { kind: 'found', route, params: NO_PARAMS, head: false })
      const get = entry.methods.get('GET')
      if (get !== undefined && !entry.methods.has('HEAD')) entry.found.set('HEAD', { kind: 'found', route: get, params: NO_PARAMS, head: true })
    }
  }

  /**
   * Finds the route for `method` and `path` (without query). HEAD falls back to GET.
   * @throws {@link MalformedError} when a path parameter has invalid %-encoding.
   */
  match(method: string, path: string): RouteMatch {
    const entry = this.statics.get(path)
    if (entry !== undefined) return entry.found.get(method) ?? entry.notAllowed
    const found = this.matchPattern(path)
    if (found === undefined) return NONE
    return this.resolve(found.entry, method, found.parts)
  }

  private resolve(entry: PathEntry, method: string, parts: readonly string[]): RouteMatch {
    let route = entry.methods.get(method)
    let head = false
    if (route === undefined && method === 'HEAD') {
      route = entry.methods.get('GET')
      head = route !== undefined
    }
    if (route === undefined) return entry.notAllowed
    const params: Record<string, string> = {}
    for (let i = 0; i < parts.length; i++) {
      const name = route.names[i]
      if (name !== undefined) params[name] = decodeParam(name, parts[i]!)
    }
    return { kind: 'found', route, params, head }
  }

  private matchPattern(path: string): { entry: PathEntry; parts: string[] } | undefined {
    if (this.patterns.length === 0) return undefined
    const parts = path.split('/')
    outer: for (const p of this.patterns) {
      if (p.segments.length !== parts.length) continue
      for (let i = 0; i < parts.length; i++) {
        if (p.isParam[i] === true ? parts[i] === '' : p.segments[i] !== parts[i]) continue outer
      }
      return { entry: p.entry, parts }
    }
    return undefined
  }
}

function decodeParam(name: string, raw: string): string {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    throw new MalformedError(`path parameter '${name}' has invalid percent-encoding`, { details: { field: name } })
  }
}
