/**
 * The option tables commands share (node options for `start` and `config`, client options for the
 * commands that talk to a node) and the small parsers their handlers use. Loads nothing heavy.
 *
 * @module
 */

import type { NodeConfigInput } from '../config.js'
import { AVAILABLE_SERVICES } from '../ports.js'

/** Log levels accepted by `--log-level` (kept here so the parser does not load pino). */
const LOG_LEVEL_CHOICES = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** The flags of {@link NODE_OPTIONS} as yargs gives them. */
export interface NodeFlags {
  config?: string
  dataDir?: string
  host?: string
  portBase?: string
  services?: string
  logLevel?: string
  drainDeadline?: string
  peers?: string
  advertise?: string
  passportUrl?: string
  registryUrl?: string
  etcd?: string
  tlsCert?: string
  tlsKey?: string
  amnesia?: boolean
  rf?: string
  writeQuorum?: string
  repairInterval?: string
  json?: boolean
}

/** Flags → the config's `overrides` (only those given). */
export function nodeFlags(a: NodeFlags): NodeConfigInput {
  const out: Record<string, unknown> = {}
  if (a.dataDir !== undefined) out['dataDir'] = a.dataDir
  if (a.host !== undefined) out['host'] = a.host
  if (a.portBase !== undefined) out['portBase'] = a.portBase
  if (a.services !== undefined) out['services'] = a.services
  if (a.logLevel !== undefined) out['logLevel'] = a.logLevel
  if (a.drainDeadline !== undefined) out['drainDeadline'] = a.drainDeadline
  if (a.peers !== undefined) out['peers'] = a.peers
  if (a.advertise !== undefined) out['advertise'] = a.advertise
  if (a.passportUrl !== undefined) out['passportUrl'] = a.passportUrl
  if (a.registryUrl !== undefined) out['registryUrl'] = a.registryUrl
  if (a.etcd !== undefined) out['etcd'] = a.etcd
  if (a.amnesia !== undefined) out['amnesia'] = a.amnesia
  if (a.tlsCert !== undefined || a.tlsKey !== undefined) out['tls'] = { ...(a.tlsCert === undefined ? {} : { cert: a.tlsCert }), ...(a.tlsKey === undefined ? {} : { key: a.tlsKey }) }
  const storage: Record<string, unknown> = {}
  if (a.rf !== undefined) storage['rf'] = a.rf
  if (a.writeQuorum !== undefined) storage['writeQuorum'] = a.writeQuorum
  if (a.repairInterval !== undefined) storage['repair'] = { interval: a.repairInterval }
  if (Object.keys(storage).length > 0) out['storage'] = storage
  return out
}

/** The options of `start` and `config print|validate`. */
export const NODE_OPTIONS = {
  config: { type: 'string', describe: 'config file (JSON, or TOML when it ends in .toml)', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data directory [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  host: { type: 'string', describe: 'interface to bind [default: 127.0.0.1]', requiresArg: true },
  'port-base': { type: 'string', describe: 'admin port; storage = base+1, registry..interop = base+2..5; 0 = free ports [default: 7700]', requiresArg: true },
  services: { type: 'string', describe: `services to host, comma-separated [default: all: ${AVAILABLE_SERVICES.join(', ')}]`, requiresArg: true },
  peers: { type: 'string', describe: "other nodes' admin URLs, comma-separated (their services are found via /status)", requiresArg: true },
  advertise: { type: 'string', describe: 'host name (or scheme://host) peers and clients reach this node at [default: --host]', requiresArg: true },
  'tls-cert': { type: 'string', describe: 'PEM certificate file: every listener serves HTTPS (with --tls-key)', requiresArg: true },
  'tls-key': { type: 'string', describe: 'PEM private key file for --tls-cert', requiresArg: true },
  'passport-url': { type: 'string', describe: "another node's passport URL: run no passport, verify with its keys and revocations, get service tokens from it (enrol first: ron-node join)", requiresArg: true },
  'registry-url': { type: 'string', describe: "another node's registry URL: run no registry; registry commands go there", requiresArg: true },
  etcd: { type: 'string', describe: 'etcd client URLs, comma-separated: registry, passport state and names on etcd (coordination.etcd in a config file)', requiresArg: true },
  amnesia: { type: 'boolean', describe: 'RAM only: memory stores, ephemeral keys, admin token printed; nothing written to disk' },
  rf: { type: 'string', describe: 'copies of every object across this node and its peers [default: 2 with peers, 1 alone]', requiresArg: true },
  'write-quorum': { type: 'string', describe: 'durable copies before a put is acknowledged [default: 1]', requiresArg: true },
  'repair-interval': { type: 'string', describe: 'how often storage repair runs, e.g. 30s [default: 30s]', requiresArg: true },
  'log-level': { type: 'string', choices: LOG_LEVEL_CHOICES, describe: 'log level [default: info]', requiresArg: true },
  'drain-deadline': { type: 'string', describe: 'how long shutdown lets requests finish, e.g. 3s [default: 3s]', requiresArg: true },
} as const

/** The options of `put` and `get`. */
export const CLIENT_OPTIONS = {
  node: { type: 'string', describe: "the node's admin URL (services found via /status) or a service URL [default: RON_NODE or http://127.0.0.1:7700]", requiresArg: true },
  token: { type: 'string', describe: 'capability token [default: RON_TOKEN, else <data-dir>/admin.token]', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data dir whose admin.token to use [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  progress: { type: 'boolean', describe: 'progress bar on stderr [default: when stderr is a terminal]' },
  ca: { type: 'string', describe: 'PEM file of the certificate authority (or self-signed certificate) of a node started with --tls-cert', requiresArg: true },
  insecure: { type: 'boolean', describe: 'accept any TLS certificate (prints a warning; prefer --ca)' },
} as const

/** The flags of {@link CLIENT_OPTIONS} as yargs gives them. */
export interface ClientFlags {
  node?: string
  token?: string
  dataDir?: string
  json?: boolean
  progress?: boolean
}

/** Client options every other client command takes (`--node`, `--token`, `--data-dir`, `--json`). */
export const COMMON = {
  node: { type: 'string', describe: "the node's admin URL (services found via /status) or a service URL [default: RON_NODE or http://127.0.0.1:7700]", requiresArg: true },
  token: { type: 'string', describe: 'capability token [default: RON_TOKEN, else <data-dir>/admin.token]', requiresArg: true },
  'data-dir': { type: 'string', describe: 'data dir of the local node (its admin.token, keys) [default: RON_DATA_DIR or the platform data dir]', requiresArg: true },
  json: { type: 'boolean', describe: 'machine-readable output (one JSON line)' },
  ca: { type: 'string', describe: "PEM file of the certificate authority (or self-signed certificate) of a node started with --tls-cert", requiresArg: true },
  insecure: { type: 'boolean', describe: "accept any TLS certificate (prints a warning; prefer --ca)" },
} as const

/** Token caveats (`token issue`, `token attenuate`). */
export const CAVEATS = {
  'max-bytes': { type: 'number', describe: 'caveat: largest upload the token allows', requiresArg: true },
  'path-prefix': { type: 'string', describe: 'caveat: paths the token is limited to', requiresArg: true },
  methods: { type: 'string', describe: 'caveat: HTTP methods the token is limited to, comma-separated', requiresArg: true },
  'name-prefix': { type: 'string', describe: 'caveat: the names the token may write (docs.alice: docs.alice and *.docs.alice)', requiresArg: true },
} as const

/** The flags of {@link COMMON} as yargs gives them. */
export interface Common {
  node?: string
  token?: string
  dataDir?: string
  json?: boolean
}

/** Only the {@link COMMON} flags of `a`. */
export const common = (a: Common): Common => ({ node: a.node, token: a.token, dataDir: a.dataDir, json: a.json }) as Common

/** Parses `1h`, `30m`, `600` (seconds) into seconds. */
export function ttl(v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const m = /^(\d+)\s*(s|m|h|d)?$/.exec(v.trim())
  if (m === null) throw new Error(`--ttl ${v}: expected e.g. 600, 30m, 1h, 1d`)
  return Number(m[1]) * ({ s: 1, m: 60, h: 3600, d: 86_400 } as const)[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd']
}

/**
 * yargs-parser reads a lone `-` as an empty flag; it is swapped for this sentinel (a NUL cannot
 * come from a real command line) before parsing and back afterwards.
 */
export const STDIO_SENTINEL = '\u0000-'

/** A parsed argument with the `-` of stdio restored. */
export const unSentinel = (s: string | undefined): string | undefined => (s === STDIO_SENTINEL ? '-' : s)
