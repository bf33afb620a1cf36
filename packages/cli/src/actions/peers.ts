/**
 * `peers ls` and `peers forget <url>` (SPEC.md §5 "Peers"): what a node knows about its peers, and
 * the operator's way to accept a peer whose node key changed (a reinstalled node): forget its pin,
 * and its next answer is pinned afresh.
 *
 * @module
 */

import { existsSync } from 'node:fs'
import { noopLogger } from '@ron/core'
import { output, resolveNodeUrl, resolveToken, type ClientOptions } from '../client.js'
import { dataDirLayout, defaultDataDir, prepareDataDir } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import type { PeerRecord } from '../peers.js'
import { normalizeUrl } from '../peers.js'
import { PinStore } from '../pins.js'

/** Options of these commands. */
export interface PeersArgs extends ClientOptions {
  json?: boolean | undefined
}

const short = (key: string | undefined): string => (key === undefined ? '-' : `${key.slice(0, 12)}…`)

/** One line per peer. */
function table(peers: readonly PeerRecord[]): string {
  if (peers.length === 0) return '(no peers)'
  return peers
    .map((p) => [p.admin, p.state, p.nodeId ?? '-', short(p.nodeKey), p.source ?? '-', p.error === undefined ? '' : `(${p.error})`].join('  ').trimEnd())
    .join('\n')
}

async function reach(url: string, init?: RequestInit): Promise<Response | undefined> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) })
  } catch {
    return undefined
  }
}

/** The data directory of the local node. */
const rootOf = (args: PeersArgs): string => args.dataDir ?? defaultDataDir({ env: args.env ?? process.env })

/**
 * The pins of a stopped node, changed by `fn` under its data directory's lock. A data directory
 * without a pins file is left untouched (nothing is created): `fn` is not called, undefined.
 */
async function withPins<T>(args: PeersArgs, fn: (pins: PinStore) => Promise<T>): Promise<T | undefined> {
  if (!existsSync(dataDirLayout(rootOf(args)).pinsFile)) return undefined
  const layout = await prepareDataDir(rootOf(args), { logger: noopLogger })
  try {
    return await fn(await PinStore.open(layout.pinsFile))
  } finally {
    await layout.release()
  }
}

/**
 * `peers ls`: the peers of the running node (its `/status`), or, when it does not answer, the pins
 * kept in the data directory.
 */
export async function peersLsCommand(args: PeersArgs, out: NodeJS.WritableStream): Promise<void> {
  const node = resolveNodeUrl(args, true)
  const res = node === undefined ? undefined : await reach(`${node}/status`, { headers: { accept: 'application/json' } })
  if (res !== undefined) {
    if (!res.ok) throw new CliError(`${node}/status answered ${res.status}; --node must be a node's admin URL`, ExitCode.Unavailable)
    const peers = ((await res.json()) as { peers?: PeerRecord[] }).peers ?? []
    output(out, args.json, { peers }, table(peers))
    return
  }
  // Read-only: no lock taken, nothing created.
  const pins = (await PinStore.open(dataDirLayout(rootOf(args)).pinsFile)).list()
  const peers: PeerRecord[] = pins.map((p) => ({ admin: p.admin, state: 'pinned', nodeId: p.nodeId, nodeKey: p.nodeKey, source: p.source, pinnedAt: p.pinnedAt, services: {}, seenAt: 0 }))
  output(out, args.json, { peers, offline: true }, `${node ?? `the node on ${rootOf(args)}`} does not answer; the pins in the data directory:\n${table(peers)}`)
}

/**
 * `peers forget <url>`: drops the pin of the peer at `url`. On a running node through
 * `POST /admin/peers/forget` (scope `node:admin`); on a stopped one in `<data dir>/pins.json`.
 * @throws {@link CliError} exit 3 when there was no pin for `url`; exit 4 without a usable token.
 */
export async function peersForgetCommand(args: PeersArgs & { url: string }, out: NodeJS.WritableStream): Promise<void> {
  let url: string
  try {
    url = normalizeUrl(args.url)
  } catch {
    throw new CliError(`${args.url} is not a URL: give the peer's admin URL as listed by ron-node peers ls`, ExitCode.Usage)
  }
  const node = resolveNodeUrl(args, true)
  const { token } = await resolveToken(args)
  const res = node === undefined ? undefined : await reach(`${node}/admin/peers/forget`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ admin: url }),
  })
  let forgotten: boolean
  let where: string
  if (res === undefined) {
    forgotten = (await withPins(args, (pins) => pins.forget(url))) === true
    where = 'in the data directory (the node is not running)'
  } else {
    const body = (await res.json().catch(() => ({}))) as { forgotten?: unknown; error?: { code?: string; message?: string } }
    if (!res.ok) {
      const why = body.error?.message ?? `HTTP ${res.status}`
      const code = res.status === 401 || res.status === 403 ? ExitCode.Auth : res.status === 404 ? ExitCode.NotFound : ExitCode.Error
      throw new CliError(`${node} refused to forget the pin: ${why}${code === ExitCode.Auth ? ' (needs a node:admin token)' : ''}`, code)
    }
    forgotten = body.forgotten === true
    where = `on ${node}`
  }
  if (!forgotten) throw new CliError(`no pin for ${url} (see ron-node peers ls)`, ExitCode.NotFound)
  output(out, args.json, { admin: url, forgotten }, `forgot the pin of ${url} ${where}; its next answer is pinned afresh`)
}
