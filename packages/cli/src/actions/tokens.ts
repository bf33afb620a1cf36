/**
 * Capability commands against the node's passport: `token issue|verify|revoke|attenuate` and
 * `keys rotate`.
 *
 * @module
 */

import { connectTo, expiredText, output, tokenExp, type ClientOptions } from '../client.js'
import { CliError, ExitCode } from '../exit-codes.js'

/** Options shared by these commands. */
export interface TokenArgs extends ClientOptions {
  json?: boolean | undefined
}

/** Caveats from flags. */
export interface CaveatFlags {
  maxBytes?: number | undefined
  pathPrefix?: string | undefined
  methods?: string | undefined
  /** The names the token may write (`docs.alice`: itself and `*.docs.alice`). */
  namePrefix?: string | undefined
}

const list = (s: string | undefined): string[] | undefined => (s === undefined ? undefined : s.split(/[\s,]+/).filter((x) => x.length > 0))

function caveats(f: CaveatFlags): Record<string, unknown> | undefined {
  const c: Record<string, unknown> = {}
  if (f.maxBytes !== undefined) c['maxBytes'] = f.maxBytes
  if (f.pathPrefix !== undefined) c['pathPrefix'] = f.pathPrefix
  if (f.methods !== undefined) c['methods'] = list(f.methods)
  if (f.namePrefix !== undefined) c['namePrefix'] = f.namePrefix
  return Object.keys(c).length > 0 ? c : undefined
}

async function passport(args: TokenArgs, needToken: boolean): Promise<{ client: import('@ron/passport').PassportClient; close(): Promise<void> }> {
  const { createPassportClient } = await import('@ron/passport')
  const conn = await connectTo(args, 'passport', needToken)
  return { client: createPassportClient(conn.transport, conn.token === undefined ? {} : { token: conn.token }), close: () => conn.close() }
}

/** What `token issue --name-prefix <prefix>` issues unless told otherwise: a token that publishes under the prefix. */
export const PUBLISHER_DEFAULTS = { aud: 'storage,index', scope: 'storage:write,index:write' } as const

/**
 * `token issue --sub --aud --scope [--ttl] [caveats]` (scope `passport:issue`). With
 * `--name-prefix` the three default to a publishing token: `publisher:<prefix>`, `storage,index`,
 * `storage:write,index:write`.
 */
export async function tokenIssueCommand(
  args: TokenArgs & CaveatFlags & { sub?: string | undefined; aud?: string | undefined; scope?: string | undefined; ttlSec?: number | undefined },
  out: NodeJS.WritableStream,
): Promise<void> {
  const publisher = args.namePrefix !== undefined
  const sub = args.sub ?? (publisher ? `publisher:${args.namePrefix!}` : undefined)
  const aud = args.aud ?? (publisher ? PUBLISHER_DEFAULTS.aud : undefined)
  const scope = args.scope ?? (publisher ? PUBLISHER_DEFAULTS.scope : undefined)
  if (sub === undefined || aud === undefined || scope === undefined) throw new CliError('--sub, --aud and --scope are required (or --name-prefix for a publishing token)', ExitCode.Usage)
  const p = await passport(args, true)
  try {
    const c = caveats(args)
    const issued = await p.client.issue({
      sub,
      aud: list(aud)!,
      scope: list(scope)!,
      ...(args.ttlSec === undefined ? {} : { ttlSec: args.ttlSec }),
      ...(c === undefined ? {} : { caveats: c }),
    })
    output(out, args.json, issued, issued.token)
  } finally {
    await p.close()
  }
}

/** `token verify <token> [--aud]`: exit 4 when the token is not valid. */
export async function tokenVerifyCommand(args: TokenArgs & { token: string; aud?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const p = await passport({ ...args, token: undefined }, false)
  try {
    const r = await p.client.verify(args.token.trim(), args.aud)
    if (r.valid) {
      const c = r.claims
      output(out, args.json, r, [`valid      yes`, `sub        ${c.sub}`, `aud        ${c.aud.join(' ')}`, `scope      ${c.scope.join(' ')}`, `expires    ${new Date(c.exp * 1000).toISOString()}`, `jti        ${c.jti}`].join('\n'))
      return
    }
    const exp = r.reason === 'expired' ? tokenExp(args.token.trim()) : undefined
    const why = exp === undefined ? r.reason : `${r.reason}: ${expiredText(exp)}`
    output(out, args.json, r, `valid      no (${why})`)
    throw new CliError(exp === undefined ? `token is not valid: ${r.reason}` : expiredText(exp), ExitCode.Auth)
  } finally {
    await p.close()
  }
}

/** `token revoke <jti|token>` (scope `passport:revoke`): revokes it and every token attenuated from it. */
export async function tokenRevokeCommand(args: TokenArgs & { what: string }, out: NodeJS.WritableStream): Promise<void> {
  const p = await passport(args, true)
  try {
    const what = args.what.trim()
    const r = await p.client.revoke(what.split('.').length === 3 ? { token: what } : { jti: what })
    const n = r.revoked.length
    output(out, args.json, r, [`revoked    ${n} token${n === 1 ? '' : 's'} (the token and everything attenuated from it)`, ...r.revoked.map((j) => `jti        ${j}`), `feed seq   ${r.seq} (verifiers synced past it refuse them)`].join('\n'))
  } finally {
    await p.close()
  }
}

/** `token attenuate <token> [--scope] [--aud] [--ttl] [caveats]`: a narrower child token (needs no scope). */
export async function tokenAttenuateCommand(
  args: TokenArgs & CaveatFlags & { parent: string; scope?: string | undefined; aud?: string | undefined; ttlSec?: number | undefined },
  out: NodeJS.WritableStream,
): Promise<void> {
  const p = await passport({ ...args, token: undefined }, false)
  try {
    const c = caveats(args)
    const child = await p.client.attenuate({
      token: args.parent.trim(),
      ...(args.scope === undefined ? {} : { scope: list(args.scope)! }),
      ...(args.aud === undefined ? {} : { aud: list(args.aud)! }),
      ...(args.ttlSec === undefined ? {} : { ttlSec: args.ttlSec }),
      ...(c === undefined ? {} : { caveats: c }),
    })
    output(out, args.json, child, child.token)
  } finally {
    await p.close()
  }
}

/** `keys rotate` (scope `passport:admin`): publishes the next issuer key; the old one stays verify-only. */
export async function keysRotateCommand(args: TokenArgs, out: NodeJS.WritableStream): Promise<void> {
  const p = await passport(args, true)
  try {
    const r = await p.client.rotate()
    const when = (ms: number | undefined): string => (ms === undefined ? '' : `, retires ${new Date(ms).toISOString()}`)
    output(
      out,
      args.json,
      r,
      [
        `current    ${r.current.kid} (epoch ${r.current.epoch}): signs new tokens`,
        `next       ${r.next.kid} (epoch ${r.next.epoch}): published, signs after the next rotation`,
        ...r.previous.map((k) => `previous   ${k.kid} (epoch ${k.epoch}): verify-only${when(k.retiresAt)}`),
      ].join('\n'),
    )
  } finally {
    await p.close()
  }
}
