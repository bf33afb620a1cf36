/**
 * The first step of a start: the options checked and resolved into what the node will do (which
 * services it hosts, which it uses on another node, its peers), before anything is touched.
 *
 * @module
 */

import { CliError, ExitCode } from '../exit-codes.js'
import { normalizeUrl } from '../peers.js'
import { AVAILABLE_SERVICES, DEFAULT_PORT_BASE, KNOWN_SERVICES, type ServiceName } from '../ports.js'
import type { StartNodeOptions } from '../node.js'

/** What a start will do, resolved from {@link StartNodeOptions}. */
export interface StartPlan {
  host: string
  portBase: number
  amnesia: boolean
  /** Services used on another node (`passport.url`, `registry.url`), not hosted here. */
  remote: Partial<Record<ServiceName, string>>
  /** The services hosted here, in port order. */
  wanted: ServiceName[]
  drainDeadlineMs: number
  /** The peers' admin URLs, normalised and without duplicates. */
  peerAdmins: string[]
}

/**
 * Checks `options` and resolves them into a {@link StartPlan}. Touches nothing.
 * @throws {@link CliError} (usage) for a bad port base, a service this build lacks, no data
 *   directory without amnesia, etcd with a remote passport or registry, a remote passport in
 *   amnesia mode, or a malformed peer URL
 */
export function planStart(options: StartNodeOptions): StartPlan {
  const host = options.host ?? '127.0.0.1'
  const portBase = options.portBase ?? DEFAULT_PORT_BASE
  const amnesia = options.amnesia === true
  // A service used on another node (passport.url, registry.url) is not hosted here.
  const remote: Partial<Record<ServiceName, string>> = {}
  if (options.passportUrl !== undefined) remote.passport = options.passportUrl.replace(/\/+$/, '')
  if (options.registryUrl !== undefined) remote.registry = options.registryUrl.replace(/\/+$/, '')
  const wanted: ServiceName[] = KNOWN_SERVICES.filter((n) => (options.services ?? AVAILABLE_SERVICES).includes(n) && remote[n] === undefined)
  const unknownServices = (options.services ?? []).filter((n) => !KNOWN_SERVICES.includes(n))
  if (!Number.isInteger(portBase) || portBase < 0 || portBase > 65535 - 5) {
    throw new CliError(`--port-base must be 0 or an integer up to 65530, got ${portBase}`, ExitCode.Usage)
  }
  for (const name of [...wanted, ...unknownServices]) {
    if (!AVAILABLE_SERVICES.includes(name)) {
      throw new CliError(`service ${name} is not available in this build (available: ${AVAILABLE_SERVICES.join(', ')})`, ExitCode.Usage)
    }
  }
  if (!amnesia && (options.dataDir === undefined || options.dataDir === '')) throw new CliError('a data directory is required (or amnesia mode)', ExitCode.Usage)
  if (options.etcd !== undefined && (remote.passport !== undefined || remote.registry !== undefined)) {
    throw new CliError('with etcd every node runs its own passport and registry on the shared state: drop passport.url and registry.url', ExitCode.Usage)
  }
  if (amnesia && remote.passport !== undefined) {
    throw new CliError('passport.url needs a data directory: the node key enrolled with that passport (ron-node join) is kept there; drop --amnesia', ExitCode.Usage)
  }
  let peerAdmins: string[]
  try {
    peerAdmins = [...new Set((options.peers ?? []).map(normalizeUrl))]
  } catch (e) {
    throw new CliError(`peers: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Usage, { cause: e })
  }
  return { host, portBase, amnesia, remote, wanted, drainDeadlineMs: options.drainDeadlineMs ?? 3000, peerAdmins }
}
