/**
 * How the client commands (`put`, `get`) find the node and a token.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import type { Dispatcher } from 'undici'
import { HttpTransport } from '@ron/core/client'
import { createStorageClient } from '@ron/storage/client'
import { resolve } from 'node:path'
import { noteNode, noteTokenSource } from './auth-context.js'
import { transportTls } from './client-tls.js'
import { dataDirLayout, defaultDataDir, errnoText } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'
import { normalizeNodeUrl, recordForUrl, recordOfDataDir, recordServes } from './node-records.js'
import { DEFAULT_PORT_BASE, PORT_OFFSETS } from './ports.js'

/** Default node URL of the client commands: the admin listener of a local node. */
export const DEFAULT_NODE_URL = `http://127.0.0.1:${DEFAULT_PORT_BASE + PORT_OFFSETS.admin}`

/** Options shared by the client commands. */
export interface ClientOptions {
  /**
   * The node's admin URL (services are found through its `/status`), or the URL of the one service
   * a command talks to. @default RON_NODE, else http://127.0.0.1:7700
   */
  node?: string | undefined
  /** Bearer token. @default RON_TOKEN, else the admin token file of the data dir */
  token?: string | undefined
  /** Data dir whose `admin.token` is used when no token is given. @default the platform data dir */
  dataDir?: string | undefined
  /** @default process.env */
  env?: Record<string, string | undefined>
}

// `--ca`/`--insecure` are applied once per process by cli.ts (client-tls.ts), before a command runs.

/** The `--data-dir` (or `RON_DATA_DIR`) the user gave, or undefined when neither was. */
function explicitDataDir(options: ClientOptions): string | undefined {
  const env = options.env ?? process.env
  if (options.dataDir !== undefined) return options.dataDir
  const d = env['RON_DATA_DIR']
  return d !== undefined && d !== '' ? d : undefined
}

function validUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new CliError(`--node ${raw} is not a URL (expected e.g. ${DEFAULT_NODE_URL})`, ExitCode.Usage)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`--node ${raw} must be an http(s) URL`, ExitCode.Usage)
  return url.href.replace(/\/+$/, '')
}

/**
 * The node URL to use. `--node` (or `RON_NODE`) when given; with `--data-dir` (or `RON_DATA_DIR`)
 * alone, the admin URL of the node running on that data directory (its `run.json`), never
 * whatever answers on the default port; otherwise http://127.0.0.1:7700.
 * @throws {@link CliError} (exit 2) for a bad URL, or a `--node` that is not the node running on
 *   `--data-dir`; (exit 6) for `--data-dir` alone when no node runs on it (unless `offline`, which
 *   then returns undefined: the command works on the data directory itself).
 */
export function resolveNodeUrl(options: ClientOptions): string
export function resolveNodeUrl(options: ClientOptions, offline: true): string | undefined
export function resolveNodeUrl(options: ClientOptions, offline = false): string | undefined {
  const env = options.env ?? process.env
  const rawNode = options.node ?? (env['RON_NODE'] !== undefined && env['RON_NODE'] !== '' ? env['RON_NODE'] : undefined)
  const node = rawNode === undefined ? undefined : validUrl(rawNode)
  const dataDir = explicitDataDir(options)
  if (dataDir === undefined) return node ?? DEFAULT_NODE_URL
  const running = recordOfDataDir(dataDir)
  if (node !== undefined) {
    if (running !== undefined && !recordServes(running, node)) {
      throw new CliError(
        `--node ${node} is not the node running on --data-dir ${resolve(dataDir)} (that one is ${running.nodeId} at ${running.admin}); drop one of the two, or make them agree`,
        ExitCode.Usage,
      )
    }
    return node
  }
  if (running !== undefined) return running.admin
  if (offline) return undefined
  throw new CliError(`the node on data dir ${resolve(dataDir)} is not running: start it with ron-node start --data-dir ${dataDir}, or pass --node`, ExitCode.Unavailable)
}

/**
 * The base URL of `service` as reached through `nodeUrl` (SPEC §6b): when `nodeUrl` is a node's
 * admin listener, the URL its `/status` reports for that service; otherwise (a service URL, whose
 * `/status` is absent or names no services) `nodeUrl` itself.
 * @throws {@link CliError} (exit 6) when the node is unreachable; (exit 3) when the node does not
 *   host `service`.
 */
export async function discoverService(nodeUrl: string, service: string, signal?: AbortSignal): Promise<string> {
  noteNode(nodeUrl)
  // undici's `request`, not the global `fetch`: the storage transport loads npm undici anyway, and
  // the global `fetch` would load Node's own bundled copy besides (~20-30 ms of a client command).
  // Both use the same global dispatcher, so `--ca`/`--insecure` (client-tls.ts) apply alike.
  const { request } = await import('undici')
  let res: Dispatcher.ResponseData
  try {
    res = await request(`${nodeUrl}/status`, { signal: signal ?? AbortSignal.timeout(10_000), headers: { accept: 'application/json' } })
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause ?? e
    if ((cause as { code?: unknown }).code === 'ECONNREFUSED') {
      throw new CliError(`the node at ${nodeUrl} is not running (connection refused): start it with ron-node start, or check --node`, ExitCode.Unavailable, { cause: e })
    }
    throw new CliError(`cannot reach ${nodeUrl}: ${errnoText(cause)}; is the node running? (see --node)`, ExitCode.Unavailable, { cause: e })
  }
  let body: unknown
  try {
    body = res.statusCode >= 200 && res.statusCode < 300 ? await res.body.json() : undefined
  } catch {
    body = undefined
  }
  if (!res.body.bodyUsed) await res.body.dump()
  const services = (body as { services?: unknown } | undefined)?.services
  if (services === null || typeof services !== 'object' || (body as { version?: unknown }).version === undefined) return nodeUrl
  const entry = (services as Record<string, { url?: unknown } | undefined>)[service]
  if (entry === undefined || typeof entry.url !== 'string') {
    throw new CliError(`the node at ${nodeUrl} does not run ${service} (it runs: ${Object.keys(services).join(', ') || 'nothing'})`, ExitCode.NotFound)
  }
  return entry.url.replace(/\/+$/, '')
}

/** Where a token came from. */
export interface ResolvedToken {
  token: string | undefined
  /**
   * `--token`, `RON_TOKEN`, the token file path (from `--data-dir` or the default data dir), or
   * `<path> (discovered: the node at <url> runs on <data dir>)`; undefined when none was found.
   */
  source: string | undefined
  /** The token file that was looked at (for error messages); undefined when none applies to the node. */
  tokenFile: string | undefined
}

async function readTokenFile(tokenFile: string): Promise<string | undefined> {
  try {
    const text = (await readFile(tokenFile, 'utf8')).trim()
    return text === '' ? undefined : text
  } catch (e) {
    const code = (e as { code?: unknown }).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw new CliError(`cannot read token file ${tokenFile}: ${errnoText(e)}`, ExitCode.Auth, { cause: e })
  }
}

/**
 * The token to use: `--token`, then `RON_TOKEN`, then an admin token file (readable only by the
 * node's user): `<data dir>/admin.token` of `--data-dir`; else, for `--node`, the data dir of the
 * node of this user running at that URL (its record in the runtime directory, see
 * node-records.ts); else, when no `--node` is given, the default data dir's. A `--node` that no
 * local record names gets no token file: the admin token of a local node is never sent to another.
 * A `--token` or `RON_TOKEN` that is given but empty is an error, never a silent fall back to the
 * admin token: a script whose variable came out empty meant a narrower token than the admin's.
 * @throws {@link CliError} (exit 2) for an empty `--token` or `RON_TOKEN`.
 */
export async function resolveToken(options: ClientOptions): Promise<ResolvedToken> {
  const env = options.env ?? process.env
  const found = (token: string | undefined, source: string, tokenFile: string | undefined): ResolvedToken => {
    const r = { token, source: token === undefined ? undefined : source, tokenFile }
    if (token !== undefined) noteTokenSource(source)
    return r
  }
  let tokenFile: string | undefined
  let discovered: string | undefined
  const dataDir = explicitDataDir(options)
  const rawNode = options.node ?? (env['RON_NODE'] !== undefined && env['RON_NODE'] !== '' ? env['RON_NODE'] : undefined)
  if (dataDir !== undefined) tokenFile = dataDirLayout(dataDir).adminToken
  else {
    const url = rawNode === undefined ? DEFAULT_NODE_URL : normalizeNodeUrl(rawNode)
    const rec = url === undefined ? undefined : recordForUrl(url, env)
    if (rec !== undefined) {
      tokenFile = dataDirLayout(rec.dataDir).adminToken
      discovered = `${tokenFile} (discovered: the node at ${url!} runs on ${rec.dataDir})`
    } else if (rawNode === undefined) tokenFile = dataDirLayout(defaultDataDir({ env })).adminToken
  }
  if (options.token !== undefined) {
    if (options.token.trim() === '') throw new CliError('--token is empty; pass a token, or leave --token out to use RON_TOKEN or the admin token file', ExitCode.Usage)
    return found(options.token.trim(), '--token', tokenFile)
  }
  const fromEnv = env['RON_TOKEN']
  if (fromEnv !== undefined) {
    if (fromEnv.trim() === '') throw new CliError('RON_TOKEN is set but empty; set it to a token, or unset it to use the admin token file', ExitCode.Usage)
    return found(fromEnv.trim(), 'RON_TOKEN', tokenFile)
  }
  if (tokenFile === undefined) return { token: undefined, source: undefined, tokenFile }
  return found(await readTokenFile(tokenFile), discovered ?? tokenFile, tokenFile)
}

/** The "no token" error: what was looked at and what to do. */
export function noTokenError(nodeUrl: string, tokenFile: string | undefined): CliError {
  const where =
    tokenFile === undefined
      ? `no node of this user is recorded at ${nodeUrl} (its admin token is found for nodes started on this machine by this user)`
      : `the token file ${tokenFile} is missing or empty`
  return new CliError(`no token for ${nodeUrl}: ${where}; pass --token, set RON_TOKEN, or pass the node's --data-dir`, ExitCode.Auth)
}

/** A storage client over HTTP plus the transport to close. */
export interface StorageConnection {
  client: ReturnType<typeof createStorageClient>
  nodeUrl: string
  close(): Promise<void>
}

/**
 * Deadline of one client call up to the response head. A PUT's head only arrives once the whole
 * body is uploaded, so this is generous; an unreachable node still fails at once (refused).
 */
export const CLIENT_TIMEOUT_MS = 60 * 60 * 1000

/** Connects a storage client to `nodeUrl` with an optional token. */
export function connectStorage(nodeUrl: string, token: string | undefined, timeoutMs = CLIENT_TIMEOUT_MS): StorageConnection {
  const transport = new HttpTransport({ targets: { storage: nodeUrl }, timeoutMs, breaker: false, ...transportTls() })
  const client = createStorageClient(transport, { target: 'storage', timeoutMs, ...(token === undefined ? {} : { token }) })
  return { client, nodeUrl, close: () => transport.close() }
}

/** The clock tolerance of the node's verifiers on `exp`/`nbf` (SPEC §5; core's default). */
export const CLOCK_TOLERANCE_SEC = 30

/** The one answer for an expired token (as the node's 401 and `token verify` say it). */
export function expiredText(expSec: number, toleranceSec = CLOCK_TOLERANCE_SEC): string {
  return `token expired at ${new Date(expSec * 1000).toISOString()} (clock tolerance ${toleranceSec} s)`
}

/** The `exp` claim of a compact JWS, read without verifying it; undefined when unreadable. */
export function tokenExp(token: string): number | undefined {
  try {
    const exp = (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }).exp
    return typeof exp === 'number' ? exp : undefined
  } catch {
    return undefined
  }
}

/**
 * Checks, without verifying the signature, that `token` could authorise `scope`: a compact JWS
 * whose claims are JSON with a future `exp` and `scope` containing `scope`. The node would
 * answer 401/403 anyway (it reads the reply before the body); this only spares uploading a large
 * file with an obviously unusable token. Verification is the node's job.
 * @throws {@link CliError} (exit code 4) saying what is wrong.
 */
export function precheckToken(token: string, scope: string, nowSec = Math.floor(Date.now() / 1000)): void {
  const parts = token.split('.')
  const bad = (why: string): CliError => new CliError(`token cannot authorise ${scope}: ${why}`, ExitCode.Auth)
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) throw bad('not a compact JWS (header.payload.signature)')
  let claims: { exp?: unknown; scope?: unknown }
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { exp?: unknown; scope?: unknown }
  } catch {
    throw bad('its claims are not JSON')
  }
  if (claims === null || typeof claims !== 'object') throw bad('its claims are not an object')
  // The node accepts a token up to the clock tolerance past its exp: refuse exactly what it refuses.
  if (typeof claims.exp === 'number' && nowSec > claims.exp + CLOCK_TOLERANCE_SEC) throw new CliError(`${expiredText(claims.exp)}: it cannot authorise ${scope}`, ExitCode.Auth)
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : []
  if (!scopes.includes(scope)) throw bad(`its scope is ${JSON.stringify(claims.scope ?? '')}`)
}

/** A connection to one service of a node, for the client commands. */
export interface ServiceConnection {
  /** The service's base URL (found through the node's `/status`). */
  url: string
  /** HTTP transport with the service mounted under its name. */
  transport: HttpTransport
  /** The token to present (undefined when none was found and none is needed). */
  token: string | undefined
  close(): Promise<void>
}

/**
 * Connects to `service` of the node at `--node` (or the service URL itself), with the token from
 * `--token`, `RON_TOKEN` or the admin token file.
 * @throws {@link CliError} (exit 4) when `needToken` and no token is found; (exit 6) when the node is unreachable.
 */
export async function connectTo(args: ClientOptions, service: string, needToken: boolean): Promise<ServiceConnection> {
  // The node first: a stopped node is "not running", not "no token".
  const nodeUrl = resolveNodeUrl(args)
  const url = await discoverService(nodeUrl, service)
  const { token, tokenFile } = await resolveToken(args)
  if (needToken && token === undefined) throw noTokenError(nodeUrl, tokenFile)
  const transport = new HttpTransport({ targets: { [service]: url }, timeoutMs: 30_000, breaker: false, ...transportTls() })
  return { url, transport, token, close: () => transport.close() }
}

/** Writes `value` as one JSON line, or `text` when not `json`. */
export function output(out: NodeJS.WritableStream, json: boolean | undefined, value: unknown, text: string): void {
  out.write(json === true ? `${JSON.stringify(value)}\n` : text.endsWith('\n') ? text : `${text}\n`)
}
