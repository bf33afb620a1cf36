/**
 * Binding a listener (HTTP, or HTTPS with a certificate and key) with a clear one-line error when
 * the port is taken or a TLS file is unreadable, and closing it within a drain deadline.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls'
import { serve, type ListenerPolicy, type RonServer } from '@ron/core'
import { CliError, ExitCode } from './exit-codes.js'

/** A bound HTTP listener. */
export interface Listener {
  /** `http://host:port`, or `https://host:port` with TLS (IPv6 hosts in brackets). */
  readonly url: string
  readonly port: number
  /**
   * Routes requests to `handle` from now on; with a service's `listener` policy, applies it as
   * `serve(service)` would (timeouts, connection caps, intake stop), over TLS the same.
   */
  attach(handle: RequestHandler, policy?: ListenerPolicy): void
  /** Stops accepting, lets in-flight requests finish until the drain deadline, then destroys sockets. Idempotent. */
  close(): Promise<void>
}

/** A `node:http` request listener. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

/** `http://host:port` (or `https://`), with IPv6 literals bracketed and wildcard hosts shown as loopback. */
export function urlFor(host: string, port: number, scheme: 'http' | 'https' = 'http'): string {
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `${scheme}://${shown.includes(':') ? `[${shown}]` : shown}:${port}`
}

/** Paths of a PEM certificate (chain) and its private key, as in the `tls` config section. */
export interface TlsFiles {
  /** PEM certificate, leaf first, followed by any intermediates. */
  cert: string
  /** PEM private key of the certificate. */
  key: string
}

/** Loaded TLS credentials, shared by every listener of a node (see {@link loadTls}). */
export interface TlsCredentials {
  readonly context: SecureContext
}

/**
 * Reads the certificate and key files and checks that they form a usable pair.
 * @throws {@link CliError} (exit code 2) naming the file that cannot be read, or saying the pair is
 *   unusable (not PEM, key does not match the certificate).
 */
export async function loadTls(files: TlsFiles): Promise<TlsCredentials> {
  const read = async (path: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(path)
    } catch (e) {
      const code = (e as { code?: unknown }).code
      const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : e instanceof Error ? e.message : String(e)
      throw new CliError(`cannot read the TLS ${what} ${path}: ${why}; check tls.${what === 'certificate' ? 'cert' : 'key'} (--tls-${what === 'certificate' ? 'cert' : 'key'})`, ExitCode.Usage, { cause: e })
    }
  }
  const cert = await read(files.cert, 'certificate')
  const key = await read(files.key, 'key')
  try {
    return { context: createSecureContext({ cert, key, minVersion: 'TLSv1.2' }) }
  } catch (e) {
    throw new CliError(
      `unusable TLS certificate/key (${files.cert}, ${files.key}): ${e instanceof Error ? e.message : String(e)}; both must be PEM and the key must match the certificate`,
      ExitCode.Usage,
      { cause: e },
    )
  }
}

/**
 * Turns a core `serve()` server into an HTTPS one: every accepted TCP socket is wrapped in a
 * server-side TLS socket before the HTTP parser and core's connection accounting see it, so
 * the per-IP cap, header timeout and draining close apply unchanged (the header timeout also
 * bounds a slow handshake). This is what `node:https` does inside, on core's server.
 */
function terminateTls(server: RonServer, tls: TlsCredentials): void {
  const http = server.server
  const listeners = http.listeners('connection') as ((socket: Socket) => void)[]
  http.removeAllListeners('connection')
  http.on('connection', (raw: Socket) => {
    const socket = new TLSSocket(raw, { isServer: true, secureContext: tls.context, ALPNProtocols: ['http/1.1'] })
    for (const l of listeners) l.call(http, socket)
  })
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
  /** Serve HTTPS with these credentials (see {@link loadTls}). @default plain HTTP */
  tls?: TlsCredentials | undefined
}

/**
 * Listens through core `serve()` (header timeout, idle timeout, per-IP connection cap, draining
 * close), over TLS when `options.tls` is given. {@link Listener.attach} swaps the handler later (a node binds every port first with a
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
  if (options.tls !== undefined) terminateTls(server, options.tls)
  return {
    url: urlFor(options.host, server.port, options.tls === undefined ? 'http' : 'https'),
    port: server.port,
    attach: (h, policy) => {
      if (policy !== undefined) server.adopt(policy)
      current = h
    },
    close: () => server.close(),
  }
}
