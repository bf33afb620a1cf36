/**
 * A fake peer for the trust-boundary tests: a plain `node:http` server on loopback that answers
 * `/status` with whatever the test wants it to claim (a node id, a node key, service URLs that
 * point back at itself) and records every other request it receives, with its bearer token; it
 * can answer them too (`answer`: a lying peer index's `/resolve/…`, say).
 */

import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the fake peer received. */
export interface Received {
  method: string
  path: string
  /** The bearer token, when one was sent. */
  token?: string
}

/** A custom answer: JSON (`json`), or raw bytes with the headers the peer chooses (`body`, `headers`). */
export type FakeReply = { status: number; json: unknown } | { status: number; body: string | Uint8Array; headers: Record<string, string> }

/** What the fake peer answers to a request other than `/status` and `/keys`; `undefined`: the default. */
export type FakeAnswer = (method: string, path: string) => FakeReply | undefined

/** A running fake peer. */
export interface FakePeer {
  /** Its admin URL (what the node under test lists in `--peers`). */
  readonly url: string
  /** What `/status` answers: mutable, read on every request. */
  status: Record<string, unknown>
  /** What `/keys` answers (a JWKS's `keys`): mutable. */
  keys: unknown[]
  /** Answers other requests (a peer index's `/resolve/…`, say): mutable, read on every request. */
  answer: FakeAnswer | undefined
  /** Every request other than `GET /status` and `GET /keys`, in arrival order. */
  readonly received: Received[]
  /** How many times `/status` was asked. */
  statusCalls(): number
  /** How many times `/keys` was asked. */
  keysCalls(): number
  close(): Promise<void>
}

/** The claims of a compact JWS (no verification: the test only inspects what it was given). */
export function claimsOf(token: string): { sub?: string; aud?: string[]; scope?: string; exp?: number } {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: string; aud?: string[]; scope?: string; exp?: number }
}

async function drain(req: IncomingMessage): Promise<void> {
  for await (const _ of req) {
    // discard
  }
}

/**
 * Starts a fake peer on 127.0.0.1. `status(url)` builds its first `/status` document (the URL is
 * known only once it listens). Replica writes (`PUT /replica`) are answered 201 so replication
 * succeeds against it; everything else 404 in the SPEC envelope.
 */
export async function startFakePeer(status: (url: string) => Record<string, unknown>): Promise<FakePeer> {
  const received: Received[] = []
  let statusCalls = 0
  let keysCalls = 0
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    if (req.method === 'GET' && path === '/status') {
      statusCalls++
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(peer.status))
      return
    }
    if (req.method === 'GET' && path === '/keys') {
      keysCalls++
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: peer.keys }))
      return
    }
    const auth = req.headers.authorization
    received.push({ method: req.method ?? '', path, ...(auth?.startsWith('Bearer ') === true ? { token: auth.slice(7) } : {}) })
    void drain(req).then(() => {
      const custom = peer.answer?.(req.method ?? '', path)
      if (custom !== undefined && 'json' in custom) {
        res.writeHead(custom.status, { 'content-type': 'application/json' }).end(JSON.stringify(custom.json))
      } else if (custom !== undefined) {
        res.writeHead(custom.status, { 'content-length': String(Buffer.byteLength(custom.body)), ...custom.headers }).end(custom.body)
      } else if (req.method === 'PUT' && path === '/replica') {
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"address":"b3:0","size":0}')
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NotFound","message":"fake peer","retryable":false,"corr_id":"x","details":{}}}')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const peer: FakePeer = {
    url,
    status: status(url),
    keys: [],
    answer: undefined,
    received,
    statusCalls: () => statusCalls,
    keysCalls: () => keysCalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return peer
}
