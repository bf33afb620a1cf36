/**
 * The node's listeners: one per hosted service and the admin listener, all bound before any
 * service is created (each answers 503 `NotReady` until its service is attached), each service's
 * listener policy applied when it is attached, and their closing in the shutdown order of SPEC §3.3.
 *
 * @module
 */

import type { HttpHandler, Logger, RonService } from '@ron/core'
import { notReadyHandler } from '../admin.js'
import { listen, type Listener, type RequestHandler, type TlsCredentials } from '../listener.js'
import { portFor, type ServiceName } from '../ports.js'

/** How long a listener lets responses finish after its service has closed. */
export const LISTENER_GRACE_MS = 250

/** The `node:http` listener of a handler. */
export function handlerOf(h: HttpHandler): RequestHandler {
  return (req, res) => h.handle(req, res)
}

/** The URL a listener is reached at: the advertised host (or `scheme://host`) with the bound port. */
export function advertisedUrl(boundUrl: string, advertise: string | undefined): string {
  if (advertise === undefined) return boundUrl
  const port = new URL(boundUrl).port
  const scheme = new URL(boundUrl).protocol
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(advertise) ? advertise : `${scheme}//${advertise.includes(':') && !advertise.startsWith('[') ? `[${advertise}]` : advertise}`
  const u = new URL(withScheme)
  u.port = port
  return u.href.replace(/\/+$/, '')
}

/** A hosted service's listener, and the service once attached. */
export interface ServiceSlot {
  name: ServiceName
  listener: Listener
  /** The advertised URL of the listener. */
  url: string
  service?: RonService
}

/** Where and how the node's listeners bind. */
export interface BindOptions {
  portBase: number
  host: string
  advertise: string | undefined
  tls: TlsCredentials | undefined
}

/**
 * Binds a listener for each of `names` into `slots` (as each binds, so a failure leaves the bound
 * ones in `slots` for the shutdown to close), each answering 503 `NotReady` until attached.
 * @throws CliError naming the port and the service when a port cannot be bound
 */
export async function bindServiceListeners(names: readonly ServiceName[], o: BindOptions, slots: ServiceSlot[]): Promise<void> {
  for (const name of names) {
    const listener = await listen(handlerOf(notReadyHandler(name)), { port: portFor(o.portBase, name), host: o.host, what: name, drainDeadlineMs: LISTENER_GRACE_MS, tls: o.tls })
    slots.push({ name, listener, url: advertisedUrl(listener.url, o.advertise) })
  }
}

/** Binds the admin listener (503 `NotReady` until the admin handler is attached). */
export function bindAdminListener(o: BindOptions): Promise<Listener> {
  return listen(handlerOf(notReadyHandler('admin')), { port: portFor(o.portBase, 'admin'), host: o.host, what: 'admin', drainDeadlineMs: LISTENER_GRACE_MS, tls: o.tls })
}

/** Routes `slot`'s listener to `service`, with the service's listener policy (timeouts, connection caps, intake stop), TLS or not. */
export function attachService(slot: ServiceSlot, service: RonService): void {
  slot.service = service
  slot.listener.attach(service.handle, service.listener)
}

/**
 * SPEC.md 3.3: each service flips readiness, answers new requests with 503 Draining and
 * Retry-After, drains and aborts stragglers, while its listener stays open to deliver those
 * answers; the listener then closes with a short grace. All services at once; never throws.
 */
export async function closeServiceSlots(slots: readonly ServiceSlot[], logger: Logger): Promise<void> {
  await Promise.allSettled(
    slots.map(async (slot) => {
      if (slot.service !== undefined) {
        try {
          await slot.service.close()
        } catch (e) {
          logger.error({ service: slot.name, err: e }, 'error while closing service')
        }
      }
      await slot.listener.close()
    }),
  )
}
