/**
 * The port layout of a node: the admin listener on the base port, each service on a fixed offset.
 *
 * @module
 */

/** Services `ron-node start` knows about, in port order. Only those that exist can be started. */
export const KNOWN_SERVICES = ['storage', 'registry', 'passport', 'index', 'interop'] as const

/** A service name from {@link KNOWN_SERVICES}. */
export type ServiceName = (typeof KNOWN_SERVICES)[number]

/** Services this build of `ron-node` can host today. */
export const AVAILABLE_SERVICES: readonly ServiceName[] = KNOWN_SERVICES

/** Default `--port-base`. */
export const DEFAULT_PORT_BASE = 7700

/**
 * Offset of each listener from `--port-base`: admin = base, storage = base+1, and base+2..base+5
 * reserved for registry, passport, index and interop.
 */
export const PORT_OFFSETS: Readonly<Record<'admin' | ServiceName, number>> = {
  admin: 0,
  storage: 1,
  registry: 2,
  passport: 3,
  index: 4,
  interop: 5,
}

/** The port a listener binds: `0` (any free port) when `portBase` is 0, else base + offset. */
export function portFor(portBase: number, listener: 'admin' | ServiceName): number {
  return portBase === 0 ? 0 : portBase + PORT_OFFSETS[listener]
}
