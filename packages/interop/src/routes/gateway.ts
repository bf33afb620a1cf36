/**
 * The gateway routes (SPEC §6a "Gateway"), public reads that stay up in brownout:
 *
 * - `GET|HEAD /n/<name>/<path>`: the name's manifest through index, then the file (`index.html`
 *   for a directory, `404.html` when nothing matches). On the gateway domain (`localhost` by
 *   default) it redirects to the name's own origin, `http://<label>.<domain>:<port>/<path>`;
 *   elsewhere (an IP address, a name whose label would pass 63 characters) it is served here, on
 *   the one origin every path URL shares, under a `Content-Security-Policy` sandbox.
 * - `GET|HEAD /o/<b3>/<path>`: the same for a manifest address, immutable (no origin of its own:
 *   an address does not fit a DNS label).
 * - `GET|HEAD http://<label>.<domain>:<port>/<path>`: the name's site on its own origin.
 *
 * Site content carries no `Access-Control-Allow-Origin` (`cors: false`): no other origin can read
 * it, and no RON origin uses cookies.
 *
 * @module
 */

import { NotFoundError, gatewayLabel, nameFromGatewayLabel, parseAddress, parseName, type Address, type AnyManifest, type Reply, type RouteContext, type Route } from '@ron/core'
import type { ObjectReader } from '../gateway/reader.js'
import { serveObject } from '../gateway/serve.js'
import type { Sites } from '../gateway/site.js'
import type { InteropContext } from './context.js'

/** What the gateway routes share. */
export interface GatewayDeps {
  s: InteropContext
  reader: ObjectReader
  sites: Sites
}

const IMMUTABLE = 'public, max-age=31536000, immutable'

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/** The host name of a `Host` header (lower case, no port), and its port when it has one. */
function hostOf(host: string | undefined): { name: string; port: string | undefined } | undefined {
  if (host === undefined) return undefined
  const m = /^([a-z0-9.-]+?)\.?(?::(\d{1,5}))?$/i.exec(host)
  return m === null ? undefined : { name: m[1]!.toLowerCase(), port: m[2] }
}

/** The query string of the request, with its `?`, or `''`. */
function queryOf(url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? '' : url.slice(q)
}

/** The raw (still encoded) path after the first `skip` segments of the URL, e.g. the `<path>` of `/n/<name>/<path>`. */
function rawRest(url: string, skip: number): string {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  return path.split('/').slice(skip + 1).join('/')
}

function redirect(location: string, cacheControl: string): Reply {
  return { status: 301, headers: { location, 'cache-control': cacheControl } }
}

/** The gateway routes. */
export function gatewayRoutes(d: GatewayDeps): Route[] {
  const { s, sites, reader } = d
  const domain = s.cfg().gateway.domain
  const nameCache = (): string => `public, max-age=${s.cfg().gateway.nameMaxAgeSec}`
  const pathCsp = (): Record<string, string> | undefined => {
    const csp = s.cfg().gateway.pathCsp
    return csp === '' ? undefined : { 'content-security-policy': csp }
  }

  /** Serves `path` of the manifest at `address`; a directory asked for without its `/` is redirected to it. */
  const serveSite = async (ctx: RouteContext, address: Address, manifest: AnyManifest | undefined, path: string, cacheControl: string, extra: Record<string, string> | undefined): Promise<Reply> => {
    const picked = await sites.pick(address, manifest, path, ctx.signal, ctx.corrId)
    if (picked.kind === 'slash') {
      const url = ctx.req.url
      const q = url.indexOf('?')
      return redirect(`${q === -1 ? url : url.slice(0, q)}/${queryOf(url)}`, cacheControl)
    }
    return serveObject(reader, {
      address: picked.entry.content,
      type: picked.entry.type,
      method: ctx.req.method === 'HEAD' ? 'HEAD' : 'GET',
      status: picked.status,
      cacheControl,
      extra,
      headers: { range: header(ctx.req.headers.range), 'if-none-match': header(ctx.req.headers['if-none-match']) },
      signal: ctx.signal,
      corrId: ctx.corrId,
    })
  }

  /**
   * The name's own origin for a path URL on the gateway domain, or undefined when this request
   * cannot go there (another host, subdomains off, a label over 63 characters).
   */
  const originOf = (ctx: RouteContext, name: string): string | undefined => {
    const g = s.cfg().gateway
    if (!g.subdomains) return undefined
    const host = hostOf(header(ctx.req.headers.host))
    if (host?.name !== g.domain) return undefined
    const label = gatewayLabel(name)
    if (label === undefined) return undefined
    // Scheme-relative: the browser keeps http or https, whichever it used.
    return `//${label}.${g.domain}${host.port === undefined ? '' : `:${host.port}`}`
  }

  const byName = async (ctx: RouteContext, name: string, path: string, extra: Record<string, string> | undefined): Promise<Reply> => {
    const r = await sites.resolveName(name, ctx.signal, ctx.corrId)
    return serveSite(ctx, r.manifestAddress, r.manifest, path, nameCache(), extra)
  }

  const routes: Route[] = [
    {
      method: 'GET',
      readinessPath: 'reads',
      path: '/n/:name',
      name: 'GET /n/:name',
      cors: false,
      handler: (ctx) => {
        const name = parseName(ctx.params.name ?? '')
        const origin = originOf(ctx, name)
        return redirect(origin === undefined ? `/n/${name}/${queryOf(ctx.req.url)}` : `${origin}/${queryOf(ctx.req.url)}`, nameCache())
      },
    },
    {
      method: 'GET',
      readinessPath: 'reads',
      path: '/n/:name/*path',
      name: 'GET /n/:name/*path',
      cors: false,
      handler: (ctx) => {
        const name = parseName(ctx.params.name ?? '')
        const origin = originOf(ctx, name)
        if (origin !== undefined) return redirect(`${origin}/${rawRest(ctx.req.url, 2)}${queryOf(ctx.req.url)}`, nameCache())
        return byName(ctx, name, ctx.params.path ?? '', pathCsp())
      },
    },
    {
      method: 'GET',
      readinessPath: 'reads',
      path: '/o/:addr/*path',
      name: 'GET /o/:addr/*path',
      cors: false,
      handler: (ctx) => serveSite(ctx, parseAddress(ctx.params.addr ?? '', 'address'), undefined, ctx.params.path ?? '', IMMUTABLE, pathCsp()),
    },
  ]
  const g = s.cfg().gateway
  if (g.subdomains) {
    routes.push({
      method: 'GET',
      readinessPath: 'reads',
      host: `:site.${domain}`,
      path: '/*path',
      name: 'GET site',
      cors: false,
      handler: (ctx) => {
        const name = nameFromGatewayLabel(ctx.params.site ?? '')
        if (name === undefined) throw new NotFoundError('no name has this label', { details: { label: ctx.params.site } })
        return byName(ctx, name, ctx.params.path ?? '', undefined)
      },
    })
  }
  return routes
}
