/**
 * The typed client of the storage HTTP API. It speaks through any {@link Transport}
 * (`MemoryTransport` in-process, `HttpTransport` over the network), turns error envelopes into
 * typed errors, and verifies whole-object reads against their address while streaming.
 *
 * @module
 */

import { IntegrityFailedError, collectBytes, createBlake3, parseAddress, throwIfError, toAddress } from '@ron/core/client'
import type { Address, Transport, TransportResponse } from '@ron/core/client'
import type { RepairPlan, RepairStatus } from './repair-state.js'

/** Options of {@link createStorageClient}. */
export interface StorageClientOptions {
  /** Transport target of the storage service. @default 'storage' */
  target?: string
  /** Bearer token sent with every request (writes need `storage:write`, deletes `storage:admin`). @default undefined */
  token?: string
  /** Aborts every call made by this client. @default undefined */
  signal?: AbortSignal
  /** Per-call deadline (covers connect and headers). @default the transport's default */
  timeoutMs?: number
}

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal
}

/** Result of {@link StorageClient.put}. */
export interface PutResponse {
  address: Address
  size: number
  /** True when the object was new on the node (201), false when it already existed (200). */
  created: boolean
}

/** Result of {@link StorageClient.get}. */
export interface GetResponse {
  /** HTTP status (200, or 206 for a range). */
  status: number
  /** Bytes in `body`. */
  size: number
  /** Total object size (from `Content-Range` for ranges). */
  totalSize: number
  /** The bytes. Whole-object reads throw {@link IntegrityFailedError} at the end on an address mismatch. */
  body: AsyncIterable<Uint8Array>
  headers: Record<string, string>
}

/** Result of {@link StorageClient.status}. */
export interface ObjectStatus {
  address: Address
  size: number
  pinned: boolean
  local: { present: boolean; ok: boolean; badChunks: number[]; reason?: string }
  placement: string[]
  replicas: { node: string; present: boolean | null }[]
  repair: RepairStatus | null
}

/** The storage client. Every method throws the typed error of the response envelope. */
export interface StorageClient {
  /** Uploads a body; `expect` makes the node refuse bytes that do not hash to it (422). */
  put(body: Uint8Array | AsyncIterable<Uint8Array> | string, opts?: CallOptions & { expect?: Address; size?: number }): Promise<PutResponse>
  /**
   * Streams an object, or a byte range of it (`range` is inclusive, like HTTP).
   * @throws {@link NotFoundError}, {@link RangeNotSatisfiableError}, {@link MalformedError}
   */
  get(address: string, opts?: CallOptions & { range?: { start: number; end?: number } | { suffix: number } }): Promise<GetResponse>
  /** Reads a whole object into memory (verified). */
  getBytes(address: string, opts?: CallOptions): Promise<Uint8Array>
  /** Size of an object, or `undefined` when it does not exist. */
  head(address: string, opts?: CallOptions): Promise<{ size: number } | undefined>
  /** Deletes an object (needs `storage:admin`); false when it did not exist. @throws ConflictError when pinned */
  delete(address: string, opts?: CallOptions): Promise<boolean>
  /** Pins an object so it cannot be deleted. */
  pin(address: string, opts?: CallOptions): Promise<void>
  /** Removes a pin. */
  unpin(address: string, opts?: CallOptions): Promise<void>
  /** Size, local chunk health, replica locations and repair state. */
  status(address: string, opts?: CallOptions): Promise<ObjectStatus>
  /** The node's current repair plan; `dryRun` computes a fresh one without enqueuing. */
  repairPlan(opts?: CallOptions & { dryRun?: boolean }): Promise<RepairPlan>
  /** Runs a planner tick now and returns its plan (needs `storage:admin`). */
  runRepair(opts?: CallOptions): Promise<RepairPlan>
}

async function* verifying(body: AsyncIterable<Uint8Array>, address: Address): AsyncGenerator<Uint8Array> {
  const h = createBlake3()
  for await (const chunk of body) {
    h.update(chunk)
    yield chunk
  }
  const actual = toAddress(h.digest())
  if (actual !== address) {
    throw new IntegrityFailedError('downloaded bytes do not match the address', { details: { expected: address, actual } })
  }
}


/**
 * Creates a client for the storage service reachable as `target` on `transport`.
 *
 * @example
 * ```ts
 * const client = createStorageClient(transport, { target: 'storage', token })
 * const { address } = await client.put('hello')
 * const bytes = await client.getBytes(address)
 * ```
 */
export function createStorageClient(transport: Transport, options: StorageClientOptions = {}): StorageClient {
  const target = options.target ?? 'storage'
  const call = async (
    method: string,
    path: string,
    opts: CallOptions | undefined,
    extra: { headers?: Record<string, string>; body?: string | Uint8Array | AsyncIterable<Uint8Array>; idempotent?: boolean } = {},
  ): Promise<TransportResponse> => {
    const headers: Record<string, string> = { ...(extra.headers ?? {}) }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    const signals = [options.signal, opts?.signal].filter((s): s is AbortSignal => s !== undefined)
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals)
    const res = await transport.request(target, {
      method,
      path,
      headers,
      ...(extra.body !== undefined ? { body: extra.body } : {}),
      ...(signal !== undefined ? { signal } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(extra.idempotent !== undefined ? { idempotent: extra.idempotent } : {}),
    })
    await throwIfError(res)
    return res
  }
  const addr = (a: string): Address => parseAddress(a)

  const client: StorageClient = {
    async put(body, opts) {
      const headers: Record<string, string> = { 'content-type': 'application/octet-stream' }
      if (opts?.expect !== undefined) headers['x-expect-address'] = addr(opts.expect)
      let payload: Uint8Array | AsyncIterable<Uint8Array>
      if (typeof body === 'string') payload = new TextEncoder().encode(body)
      else payload = body
      if (payload instanceof Uint8Array) headers['content-length'] = String(payload.byteLength)
      else if (opts?.size !== undefined) headers['content-length'] = String(opts.size)
      const res = await call('PUT', '/o', opts, { headers, body: payload, idempotent: payload instanceof Uint8Array })
      const j = await res.json<{ address: Address; size: number }>()
      return { address: j.address, size: j.size, created: res.status === 201 }
    },
    async get(address, opts) {
      const a = addr(address)
      const headers: Record<string, string> = {}
      const r = opts?.range
      if (r !== undefined) headers.range = 'suffix' in r ? `bytes=-${r.suffix}` : `bytes=${r.start}-${r.end ?? ''}`
      const res = await call('GET', `/o/${a}`, opts, { headers })
      const size = Number(res.headers['content-length'] ?? NaN)
      let totalSize = size
      const cr = res.headers['content-range']
      if (cr !== undefined) totalSize = Number(cr.split('/')[1])
      const body = res.status === 200 ? verifying(res.body, a) : res.body
      return { status: res.status, size, totalSize, body, headers: res.headers }
    },
    async getBytes(address, opts) {
      return collectBytes((await client.get(address, opts)).body)
    },
    async head(address, opts) {
      try {
        const res = await call('HEAD', `/o/${addr(address)}`, opts)
        await res.dump()
        return { size: Number(res.headers['content-length']) }
      } catch (e) {
        if ((e as { code?: string }).code === 'NotFound') return undefined
        throw e
      }
    },
    async delete(address, opts) {
      try {
        const res = await call('DELETE', `/o/${addr(address)}`, opts)
        await res.dump()
        return true
      } catch (e) {
        if ((e as { code?: string }).code === 'NotFound') return false
        throw e
      }
    },
    async pin(address, opts) {
      const res = await call('POST', `/o/${addr(address)}/pin`, opts, { idempotent: true })
      await res.dump()
    },
    async unpin(address, opts) {
      const res = await call('DELETE', `/o/${addr(address)}/pin`, opts, { idempotent: true })
      await res.dump()
    },
    async status(address, opts) {
      const res = await call('GET', `/o/${addr(address)}/status`, opts)
      return res.json<ObjectStatus>()
    },
    async repairPlan(opts) {
      const res = await call('GET', `/repair/plan${opts?.dryRun ? '?dryRun=1' : ''}`, opts)
      return res.json<RepairPlan>()
    },
    async runRepair(opts) {
      const res = await call('POST', '/repair/run', opts)
      return res.json<RepairPlan>()
    },
  }
  return client
}
