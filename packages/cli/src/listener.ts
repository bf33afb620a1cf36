/**
 * Binding a listener with a clear one-line error when the port is taken, and closing it within a
 * drain deadline.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import { serve, type RonServer } from '@ron/core'
import { CliError, ExitCode } from './exit-codes.js'

/** A bound HTTP listener. */
export interface Listener {
  /** `http://host:port` (IPv6 hosts in brackets). */
  readonly url: string
  readonly port: number
  /**
   * Routes requests to `handle` from now on.
   */
  attach(handle: RequestHandler): void
  /** Stops accepting, lets in-flight requests finish until the drain deadline, then destroys sockets. Idempotent. */
  close(): Promise<void>
}

/** A `node:http` request listener. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

/** `http://host:port`, with IPv6 literals bracketed and wildcard hosts shown as loopback. */
export function urlFor(host: string, port: number): string {
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`
}

/** The one-line message for a bind failure of `port` for `what`. */
export function bindErrorMessage(e: unknown, port: number, host: string, what: string): string {
  const code = (e as { code?: unknown }).code
  if (code === 'EADDRINUSE') return `port ${port} is in use (${what}); pick another with --port-base`
  if (code === 'EACCES') return `port ${port} needs privileges (${what}); pick another with --port-base`
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `cannot listen on ${host} (${what}): address not available; check --host`
  return `cannot listen on ${host}:${port} (${what}): ${e instanceof Error ? e.message : String(e)}`
}

/** Options of {@link listen}. */
export interface ListenOptions {
  port: number
  host: string
  /** Listener name for messages (`storage`, `admin`). */
  what: string
  /** How long `close()` lets in-flight requests finish before destroying their sockets. */
  drainDeadlineMs: number
}

/**
 * Listens through core `serve()` (header timeout, idle timeout, per-IP connection cap, draining
 * close). {@link Listener.attach} swaps the handler later (a node binds every port first with a
 * handler answering 503 `NotReady`, then attaches each service).
 * @throws {@link CliError} naming the port and the listener when binding fails.
 */
export async function listen(handle: RequestHandler, options: ListenOptions): Promise<Listener> {
  let current: RequestHandler = handle
  let server: RonServer
  try {
    server = await serve({ handle: (req, res) => current(req, res) }, { port: options.port, host: options.host, drainDeadlineMs: options.drainDeadlineMs })
  } catch (e) {
    throw new CliError(bindErrorMessage(e, options.port, options.host, options.what), ExitCode.Error, { cause: e })
  }
  return {
    url: urlFor(options.host, server.port),
    port: server.port,
    attach: (h) => {
      current = h
    },
    close: () => server.close(),
  }
}
