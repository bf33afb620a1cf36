/**
 * Node's own refusals — a request its parser rejects before any handler runs: headers over
 * `maxHeaderSize` (431), a malformed request (400), headers not received within the header
 * timeout (408) — answered with the SPEC error envelope and a correlation id instead of Node's
 * bare status line. {@link serve} installs it; a host with its own `node:http` server calls
 * {@link answerClientError} from its `'clientError'` listener.
 *
 * @module
 */

import { STATUS_CODES, maxHeaderSize as defaultMaxHeaderSize } from 'node:http'
import type { Duplex } from 'node:stream'
import { MalformedError, OverLimitError, RequestTimeoutError, envelopeJson, type RonError } from '../errors.js'
import { CORR_ID_HEADER, generateCorrId } from './corr-id.js'

/** Options of {@link answerClientError}. */
export interface ClientErrorOptions {
  /** The server's header size cap, stated in a 431's `details.limit`. @default node's `http.maxHeaderSize` */
  maxHeaderSize?: number
}

/** The status and error a parser failure answers with. */
function classify(err: Error & { code?: unknown }, o: ClientErrorOptions): { status: number; error: RonError } {
  const code = typeof err.code === 'string' ? err.code : 'unknown'
  switch (code) {
    case 'HPE_HEADER_OVERFLOW': {
      const limit = o.maxHeaderSize ?? defaultMaxHeaderSize
      // 431 (RFC 6585) on the wire; the envelope's code is OverLimit with the limit it hit.
      return { status: 431, error: new OverLimitError(`request headers exceed ${limit} bytes`, { details: { source: 'headers', limit, reason: 'header_overflow' } }) }
    }
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, error: new OverLimitError('chunk extensions too large', { details: { source: 'chunk_extensions', reason: 'chunk_extensions_overflow' } }) }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, error: new RequestTimeoutError('request headers not received in time', { details: { op: 'read', reason: 'headers' } }) }
    default:
      return { status: 400, error: new MalformedError('malformed HTTP request', { details: { reason: code } }) }
  }
}

/**
 * Answers a `'clientError'` of a `node:http` server: when the socket can still take an answer
 * (it is writable and no response has begun on it) it gets the SPEC envelope — 431 `OverLimit`
 * (`details.source: "headers"`) for oversized headers, 408 `RequestTimeout`
 * (`details.reason: "headers"`) for the header timeout, 400 `Malformed` (`details.reason`: the
 * parser's code) otherwise — with `Connection: close`; then the socket is closed. A reset
 * connection is only closed.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * const server = createServer(service.handle)
 * server.on('clientError', (err, socket) => answerClientError(err, socket))
 * ```
 */
export function answerClientError(err: Error & { code?: unknown }, socket: Duplex, options: ClientErrorOptions = {}): void {
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  const { status, error } = classify(err, options)
  const corrId = generateCorrId()
  const body = envelopeJson(error, corrId)
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${CORR_ID_HEADER}: ${corrId}\r\nconnection: close\r\n\r\n`
  socket.end(head + body, () => socket.destroy())
}
