/**
 * The admin listener answers only its own host names (SPEC.md §5, docs/security.md "A browser"):
 * a DNS-rebinding page (`http://evil.example:7700/`, its name re-pointed at 127.0.0.1) makes the
 * browser send `Host: evil.example:7700`, and is refused before any route runs, so it cannot read
 * `/status` or the dashboard, nor post to the admin routes.
 *
 * Allowed: any IP literal (a page can only be same-origin with an IP by being served from it, so no
 * rebinding is involved), `localhost`, the bound host name and the advertised host name. A request
 * without a `Host` header (HTTP/1.0 tools) is not from a browser and is allowed.
 *
 * @module
 */

import { isIP } from 'node:net'

/** The host name of a `Host` header value (lower case, no port, no brackets, no trailing dot), or undefined when it is not one. */
export function hostNameOf(host: string): string | undefined {
  if (host === '' || /[\s/?#@\\]/.test(host)) return undefined
  try {
    const name = new URL(`http://${host}`).hostname.toLowerCase().replace(/\.$/, '')
    return name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name
  } catch {
    return undefined
  }
}

/** The host name of `--advertise` (a host name, or `scheme://host[:port]`), or undefined. */
function advertisedName(advertise: string | undefined): string | undefined {
  if (advertise === undefined) return undefined
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(advertise)) {
    try {
      return hostNameOf(new URL(advertise).host)
    } catch {
      return undefined
    }
  }
  return hostNameOf(advertise.includes(':') && !advertise.startsWith('[') && isIP(advertise) === 6 ? `[${advertise}]` : advertise)
}

/**
 * The check of the admin listener's `Host` header: true when `host` (the header, possibly
 * undefined) names this node.
 * @param bindHost the interface the node binds (`--host`)
 * @param advertise `--advertise`, when given
 */
export function adminHosts(bindHost: string, advertise: string | undefined): (host: string | undefined) => boolean {
  const names = new Set(['localhost'])
  for (const n of [hostNameOf(isIP(bindHost) === 6 ? `[${bindHost}]` : bindHost), advertisedName(advertise)]) if (n !== undefined) names.add(n)
  return (host) => {
    if (host === undefined) return true
    const name = hostNameOf(host)
    return name !== undefined && (isIP(name) !== 0 || names.has(name))
  }
}
