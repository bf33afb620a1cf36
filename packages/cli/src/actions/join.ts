/**
 * `ron-node join <admin-url> --token T`: enrols this node's key with another node's passport
 * (SPEC.md §5, `POST /v1/passport/nodes`, scope `passport:admin`) and writes `<data dir>/config.json`
 * so the next `ron-node start` uses that passport and registry and has the owner as a peer.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HttpTransport, SERVICE_CALL_SCOPES, noopLogger } from '@ron/core'
import { createPassportClient } from '@ron/passport'
import { DEFAULT_NODE_URL, discoverService, output, resolveNodeUrl } from '../client.js'
import { DATA_DIR_CONFIG_FILE } from '../config.js'
import { defaultDataDir, errnoText, prepareDataDir } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { loadOrCreateIdentity } from '../identity.js'
import { writeSecret } from '../keys.js'
import { normalizeUrl } from '../peers.js'

/**
 * Scopes a joined node's key may obtain from the owner's passport: SPEC.md §5's service-call
 * scopes, what its services ask for (replica traffic, announcements, interop's writes, from which
 * it attenuates upload capabilities). Never `*`, `passport:*` or `node:admin`.
 */
export const JOINED_NODE_SCOPES: readonly string[] = SERVICE_CALL_SCOPES

/** Arguments of {@link joinCommand}. */
export interface JoinArgs {
  /** The passport owner's admin URL (its `/status` names its passport and registry). */
  url: string
  /** The owner's admin token (scope `passport:admin`); `--token` or `RON_TOKEN`. */
  token?: string | undefined
  /** This node's data directory. */
  dataDir?: string | undefined
  json?: boolean | undefined
  env?: Record<string, string | undefined>
}

/** What `join --json` prints. */
export interface JoinResult {
  nodeId: string
  passport: string
  registry?: string
  peer: string
  scopes: string[]
  configFile: string
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return {}
    throw new CliError(`cannot read ${path}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
  try {
    const v = JSON.parse(text) as unknown
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>
  } catch {
    // reported below
  }
  throw new CliError(`${path} is not a JSON object; fix or remove it, then join again`, ExitCode.Usage)
}

/**
 * Enrols the node key and writes the config. The data directory is locked while it runs (so join
 * a node that is stopped) and its identity is created when missing.
 * @throws {@link CliError}: no token (exit 4), owner unreachable (exit 6), refused (exit 4).
 */
export async function joinCommand(args: JoinArgs, out: NodeJS.WritableStream): Promise<void> {
  const env = args.env ?? process.env
  const token = args.token ?? env['RON_TOKEN']
  if (token === undefined || token === '') {
    throw new CliError("join needs the passport owner's admin token: --token \"$(cat <owner data dir>/admin.token)\" or RON_TOKEN", ExitCode.Auth)
  }
  const owner = resolveNodeUrl({ node: args.url })
  if (owner === DEFAULT_NODE_URL && args.url === '') throw new CliError('say which node to join: ron-node join http://host:7700', ExitCode.Usage)
  const passportUrl = await discoverService(owner, 'passport')
  let registryUrl: string | undefined
  try {
    registryUrl = await discoverService(owner, 'registry')
  } catch (e) {
    if (!(e instanceof CliError && e.exitCode === ExitCode.NotFound)) throw e
  }
  const root = args.dataDir ?? defaultDataDir({ env })
  const layout = await prepareDataDir(root, { logger: noopLogger })
  try {
    const identity = await loadOrCreateIdentity(layout, Date.now())
    const x = (identity.nodeKey.publicJwk as { x?: string }).x
    if (x === undefined) throw new CliError(`the node key in ${layout.nodeKey} has no public part; restore it from a backup`, ExitCode.Error)
    const http = new HttpTransport({ timeoutMs: 10_000, breaker: false })
    try {
      await createPassportClient(http, { target: passportUrl, token }).enrolNode({
        nodeId: identity.nodeId,
        publicJwk: { kty: 'OKP', crv: 'Ed25519', x },
        scopes: [...JOINED_NODE_SCOPES],
      })
    } finally {
      await http.close()
    }
    const configFile = join(layout.root, DATA_DIR_CONFIG_FILE)
    const config = await readJson(configFile)
    const section = (k: string): Record<string, unknown> => {
      const v = config[k]
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
    }
    config['passport'] = { ...section('passport'), url: passportUrl }
    if (registryUrl !== undefined) config['registry'] = { ...section('registry'), url: registryUrl }
    const peers = Array.isArray(config['peers']) ? (config['peers'] as unknown[]).filter((p): p is string => typeof p === 'string') : []
    if (!peers.map((p) => normalizeUrl(p)).includes(owner)) peers.push(owner)
    config['peers'] = peers
    await writeSecret(configFile, `${JSON.stringify(config, null, 2)}\n`)
    const result: JoinResult = {
      nodeId: identity.nodeId,
      passport: passportUrl,
      ...(registryUrl === undefined ? {} : { registry: registryUrl }),
      peer: owner,
      scopes: [...JOINED_NODE_SCOPES],
      configFile,
    }
    const text = [
      `enrolled node ${identity.nodeId} with the passport at ${passportUrl} (scopes: ${JOINED_NODE_SCOPES.join(', ')})`,
      `wrote ${configFile}: passport.url = ${passportUrl}${registryUrl === undefined ? '' : `, registry.url = ${registryUrl}`}, peer ${owner}`,
      `next: ron-node start${args.dataDir === undefined ? '' : ` --data-dir ${args.dataDir}`} (no other flags needed)`,
    ].join('\n')
    output(out, args.json, result, text)
  } finally {
    await layout.release()
  }
}
