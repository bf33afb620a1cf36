/**
 * Route table: compiled once at startup, matched on every request without allocation for static
 * paths. Static paths are a `Map` lookup; parametrised paths are matched segment by segment; a
 * catch-all last segment (`/n/:name/*path`) takes the rest of the path and is tried only after
 * every fixed-length pattern. Routes that declare a `host` live in tables of their own, consulted
 * only by {@link Router.matchHost} and only when there are any.
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
  /** The route's request metrics, bound once by the handler (`HttpHooks.observer`) on first use. */
  observer: ((method: string, status: number, seconds: number) => void) | undefined
  /**
   * The route's fields the pipeline reads per request, copied here: route literals come in many
   * shapes (one per set of optional fields), so reading them off `route` is a megamorphic
   * load each, where every compiled route has one shape.
   */
  readonly handler: Route['handler']
  readonly scope: string | undefined
  readonly queue: string | undefined
  readonly bodyLimit: number | undefined
  /** `route.cors === false`: the route answers without CORS headers. */
  readonly noCors: boolean
}

/** All routes sharing one path pattern. */
interface PathEntry {
  readonly methods: Map<string, CompiledRoute>
  /** Value of the `Allow` header for this path. */
  allow: string
  /** Precomputed match results for static paths, by method (HEAD falls back to GET). */
  readonly found: Map<string, RouteMatch>
  /** `found.get('GET')`, the method most requests have, without the lookup. */
  get: RouteMatch | undefined
  /** Precomputed 405 result. */
  notAllowed: RouteMatch
}

interface ParamPattern {
  readonly segments: readonly string[]
  /** For each segment: whether it is a parameter. */
  readonly isParam: readonly boolean[]
  readonly entry: PathEntry
  /** The last segment is a catch-all (`*name`): it takes the rest of the path, one segment or more. */
  readonly rest: boolean
}

/** The routes of one `host` pattern. */
interface HostTable {
  /** The host name's part after the captured label (`.localhost`), or the whole host name when nothing is captured. */
  readonly suffix: string
  /** The param the first label goes into; undefined for an exact host name. */
  readonly param: string | undefined
  readonly router: Router
}

const LABEL = /^[a-z0-9-]{1,63}$/
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Result of {@link Router.match}. */
export type RouteMatch =
  | { kind: 'found'; route: CompiledRoute; params: Record<string, string>; head: boolean }
  | { kind: 'method'; allow: string }
  | { kind: 'none' }

const NO_PARAMS: Record<string, string> = Object.freeze({})
/** At most this many static paths of one length are compared one by one; more are looked up by hash. */
const FEW_STATICS = 4
const NONE: RouteMatch = { kind: 'none' }

/**
 * Compiled route table. Construct once; {@link Router.match} is the hot path.
 * @internal
 */
export class Router {
  private readonly statics = new Map<string, PathEntry>()
  /**
   * The static paths by length, as `[path, entry, path, entry…]`, for a length with at most
   * {@link FEW_STATICS} of them (`null` for more: look them up in {@link Router.statics}; a hole
   * for none). A request's path is a fresh string: a `Map` lookup hashes it first (~0.45k
   * instructions for `/registry/head`), where a comparison with a same-length path is ~50.
   */
  private readonly staticsByLength: (readonly (string | PathEntry)[] | null | undefined)[] = []
  private readonly patterns: ParamPattern[] = []
  /** Catch-all patterns, longest fixed prefix first: tried after {@link Router.patterns}. */
  private readonly restPatterns: ParamPattern[] = []
  private readonly hosts: HostTable[] = []
  /** True when some route declares a `host`: the pipeline then calls {@link Router.matchHost}. */
  readonly hasHostRoutes: boolean

  /**
   * @throws {@link RouteConfigError} for a write route without `scope`/`public`, a duplicate
   * method+path, or a malformed path or host pattern.
   */
  constructor(routes: readonly Route[]) {
    const byHost = new Map<string, Route[]>()
    const own: Route[] = []
    for (const route of routes) {
      if (route.host === undefined) own.push(route)
      else {
        const { host, ...plain } = route
        const list = byHost.get(host) ?? []
        list.push(plain)
        byHost.set(host, list)
      }
    }
    for (const [host, list] of byHost) this.hosts.push(hostTable(host, list))
    this.hasHostRoutes = this.hosts.length > 0
    const byPattern = new Map<string, PathEntry>()
    for (const route of own) {
      const where = `${route.method} ${route.path}`
      if (typeof route.path !== 'string' || !route.path.startsWith('/')) {
        throw new RouteConfigError(`route ${where}: path must start with '/'`)
      }
      if (WRITE_METHODS.has(route.method) && route.scope === undefined && route.public !== true) {
        throw new RouteConfigError(`route ${where}: a write route must declare a scope or public: true`)
      }
      if (typeof route.handler !== 'function') throw new RouteConfigError(`route ${where}: handler is not a function`)
      const segments = route.path.split('/')
      const names = segments.map((seg, i) => {
        if (!seg.startsWith(':') && !seg.startsWith('*')) return undefined
        if (seg.startsWith('*') && i !== segments.length - 1) throw new RouteConfigError(`route ${where}: a catch-all '${seg}' must be the last segment`)
        const name = seg.slice(1)
        if (!PARAM_NAME.test(name)) throw new RouteConfigError(`route ${where}: bad param name '${name}'`)
        return name
      })
      const rest = segments[segments.length - 1]!.startsWith('*')
      // Normalise the pattern so `/o/:a` and `/o/:b` are recognised as the same path.
      const shape = segments.map((seg, i) => (names[i] === undefined ? seg : seg[0])).join('/')
      let entry = byPattern.get(shape)
      if (entry === undefined) {
        entry = { methods: new Map(), allow: '', found: new Map(), get: undefined, notAllowed: { kind: 'none' } }
        byPattern.set(shape, entry)
        const pattern = { segments, isParam: names.map((n) => n !== undefined), entry, rest }
        if (rest) this.restPatterns.push(pattern)
        else if (names.some((n) => n !== undefined)) this.patterns.push(pattern)
        else this.statics.set(route.path, entry)
      }
      if (entry.methods.has(route.method)) throw new RouteConfigError(`route ${where}: duplicate route`)
      entry.methods.set(route.method, {
        route,
        label: route.name ?? route.path,
        names,
        observer: undefined,
        // Called as `handler.call(route, ctx)` (handler.ts), so `this` is still the route.
        // eslint-disable-next-line @typescript-eslint/unbound-method
        handler: route.handler,
        scope: route.scope,
        queue: route.queue,
        bodyLimit: route.bodyLimit,
        noCors: route.cors === false,
      })
    }
    for (const entry of byPattern.values()) {
      const allow = new Set(entry.methods.keys())
      if (allow.has('GET')) allow.add('HEAD')
      entry.allow = [...allow].sort().join(', ')
      entry.notAllowed = { kind: 'method', allow: entry.allow }
      for (const [method, route] of entry.methods) entry.found.set(method, { kind: 'found', route, params: NO_PARAMS, head: false })
      const get = entry.methods.get('GET')
      if (get !== undefined && !entry.methods.has('HEAD')) entry.found.set('HEAD', { kind: 'found', route: get, params: NO_PARAMS, head: true })
      entry.get = entry.found.get('GET')
    }
    // The most specific catch-all first: the one with the longest fixed prefix.
    this.restPatterns.sort((a, b) => b.segments.length - a.segments.length)
    // Packed (no holes), so a lookup reads it without a hole check.
    let longest = -1
    for (const path of this.statics.keys()) longest = Math.max(longest, path.length)
    const byLength = this.staticsByLength
    for (let i = 0; i <= longest; i++) byLength.push(undefined)
    for (const [path, entry] of this.statics) {
      const same = byLength[path.length]
      if (same === null) continue
      if (same !== undefined && same.length >= 2 * FEW_STATICS) byLength[path.length] = null
      else byLength[path.length] = [...(same ?? []), path, entry]
    }
  }

  /**
   * Finds the route for a request to `host` (the `Host` header): `undefined` when no host pattern
   * matches it (route with {@link Router.match}); otherwise the match among that host's routes,
   * with the captured label in `params`. The port, a trailing dot and case are ignored.
   * @throws {@link MalformedError} when a path parameter has invalid %-encoding.
   */
  matchHost(method: string, host: string | undefined, path: string): RouteMatch | undefined {
    if (host === undefined) return undefined
    const name = hostName(host)
    for (const t of this.hosts) {
      let label: string | undefined
      if (t.param === undefined) {
        if (name !== t.suffix) continue
      } else {
        if (name.length <= t.suffix.length || !name.endsWith(t.suffix)) continue
        label = name.slice(0, name.length - t.suffix.length)
        if (!LABEL.test(label)) continue
      }
      const m = t.router.match(method, path)
      if (m.kind !== 'found' || label === undefined) return m
      return { kind: 'found', route: m.route, params: { ...m.params, [t.param!]: label }, head: m.head }
    }
    return undefined
  }

  /**
   * Finds the route for `method` and `path` (without query). HEAD falls back to GET.
   * @throws {@link MalformedError} when a path parameter has invalid %-encoding.
   */
  match(method: string, path: string): RouteMatch {
    return this.matchStatic(method, path) ?? this.matchPatterns(method, path)
  }

  /**
   * {@link Router.match} for a path already known not to be a static one (its
   * {@link Router.matchStatic} was undefined): the parameterised patterns only.
   * @throws {@link MalformedError} when a path parameter has invalid %-encoding.
   */
  matchPatterns(method: string, path: string): RouteMatch {
    const found = this.matchPattern(path)
    if (found === undefined) return NONE
    return this.resolve(found.entry, method, found.parts)
  }

  /**
   * {@link Router.match} for a static path: undefined when `path` is not one (then it may still
   * match a pattern). HEAD falls back to GET.
   */
  matchStatic(method: string, path: string): RouteMatch | undefined {
    const entry = this.staticEntry(path)
    if (entry === undefined) return undefined
    return (method === 'GET' ? entry.get : entry.found.get(method)) ?? entry.notAllowed
  }

  /** The entry of the static path `path`, if there is one (see {@link Router.staticsByLength}). */
  private staticEntry(path: string): PathEntry | undefined {
    const byLength = this.staticsByLength
    if (path.length >= byLength.length) return undefined
    const same = byLength[path.length]
    if (same === undefined) return undefined
    if (same === null) return this.statics.get(path)
    for (let i = 0; i < same.length; i += 2) if (same[i] === path) return same[i + 1] as PathEntry
    return undefined
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
    if (this.patterns.length === 0 && this.restPatterns.length === 0) return undefined
    const parts = path.split('/')
    outer: for (const p of this.patterns) {
      if (p.segments.length !== parts.length) continue
      for (let i = 0; i < parts.length; i++) {
        if (p.isParam[i] === true ? parts[i] === '' : p.segments[i] !== parts[i]) continue outer
      }
      return { entry: p.entry, parts }
    }
    return this.restPatterns.length === 0 ? undefined : this.matchRest(parts)
  }

  /** A catch-all match: the fixed segments as usual, then the rest of the path (possibly empty) as one part. */
  private matchRest(parts: string[]): { entry: PathEntry; parts: string[] } | undefined {
    outer: for (const p of this.restPatterns) {
      const last = p.segments.length - 1
      if (parts.length < p.segments.length) continue
      for (let i = 0; i < last; i++) {
        if (p.isParam[i] === true ? parts[i] === '' : p.segments[i] !== parts[i]) continue outer
      }
      const out = parts.slice(0, last)
      out.push(parts.slice(last).join('/'))
      return { entry: p.entry, parts: out }
    }
    return undefined
  }
}

/** The host name of a `Host` header: lower case, without port or trailing dot. */
function hostName(host: string): string {
  let end = host.length
  if (!host.endsWith(']')) {
    const colon = host.lastIndexOf(':')
    if (colon !== -1) end = colon
  }
  let name = host.slice(0, end).toLowerCase()
  if (name.endsWith('.')) name = name.slice(0, -1)
  return name
}

/** Compiles the routes of one host pattern: `:param.rest.of.name` (captures the first label) or an exact host name. */
function hostTable(host: string, routes: Route[]): HostTable {
  const where = `host '${host}'`
  const pattern = host.toLowerCase()
  if (pattern.startsWith(':')) {
    const dot = pattern.indexOf('.')
    const param = host.slice(1, dot === -1 ? undefined : dot)
    if (dot === -1 || dot === pattern.length - 1 || !PARAM_NAME.test(param)) throw new RouteConfigError(`${where}: expected ':name.domain' or a host name`)
    return { suffix: pattern.slice(dot), param, router: new Router(routes) }
  }
  if (!/^[a-z0-9.-]+$/.test(pattern)) throw new RouteConfigError(`${where}: expected ':name.domain' or a host name`)
  return { suffix: pattern, param: undefined, router: new Router(routes) }
}

function decodeParam(name: string, raw: string): string {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    throw new MalformedError(`path parameter '${name}' has invalid percent-encoding`, { details: { field: name } })
  }
}
