/**
 * A small mesh for the gateway tests, in process: real storage (memory), real index (amnesia) and
 * interop on one MemoryTransport, plus helpers to publish a directory the way `ron-node publish`
 * does (files, then the directory manifest, then the name).
 */
import { MemoryTransport, addressOf, collectBytes, dirManifest, mediaTypeFor, type Address, type Clock, type DispatchTarget, type RonRequest, type RonResponse, type TransportResponse } from '@ron/core'
import { VirtualClock, createTestIssuer, type TestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService, type IndexService } from '@ron/index'
import { createStorageClient, createStorageService, type StorageService } from '@ron/storage'
import { createInteropService, type InteropConfigInput, type InteropService } from '../src/index.js'
import { closeOnVirtualTime } from './helpers.js'

export interface Mesh {
  transport: MemoryTransport
  issuer: TestIssuer
  storage: StorageService
  index: IndexService
  interop: InteropService
  /** Stores `bytes` in the storage mounted as `target`. */
  put(bytes: Uint8Array | string, target?: string): Promise<Address>
  /** Publishes `files` as a directory under `name`; returns the manifest address. */
  publish(name: string, files: Record<string, Uint8Array | string>): Promise<Address>
  /** Tells index that the storage `target` (a node `node`) holds `address`. */
  announce(address: Address, target: string, node?: string): Promise<void>
  get(path: string, headers?: Record<string, string>, method?: string): Promise<TransportResponse & { utf8: string; bytes: Buffer }>
  close(): Promise<void>
}

/** `clock`: interop's clock only (its read deadline); storage and index keep real time. */
export async function mesh(config: InteropConfigInput = {}, clock?: Clock): Promise<Mesh> {
  const transport = new MemoryTransport({ timeoutMs: 60_000 })
  const issuer = createTestIssuer()
  const storage = await createStorageService({ auth: { keys: issuer.keys } })
  transport.mount('storage', storage)
  const index = await createIndexService({ amnesia: true, auth: { keys: issuer.keys } }, transport)
  transport.mount('index', index)
  const interop = await createInteropService({ retry: { tries: 1 }, ...config }, transport, clock === undefined ? {} : { clock })
  transport.mount('interop', interop)
  const writer = issuer.mint({ scope: ['storage:write', 'index:write'], aud: ['storage', 'index'], ttlSec: 3600 })
  const others: Array<{ close(): Promise<void> }> = []
  const put = async (bytes: Uint8Array | string, target = 'storage'): Promise<Address> =>
    (await createStorageClient(transport, { target, token: writer }).put(typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes)).address
  return {
    transport,
    issuer,
    storage,
    index,
    interop,
    put,
    async publish(name, files) {
      const entries = []
      for (const [path, bytes] of Object.entries(files)) {
        const b = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes
        entries.push({ path, content: await put(b), size: b.byteLength, type: mediaTypeFor(path) })
      }
      const manifestAddress = await put(dirManifest(entries).bytes)
      await createIndexClient(transport, { token: writer }).setName(name, manifestAddress)
      return manifestAddress
    },
    async announce(address, target, node = 'n-b') {
      const token = issuer.mint({ sub: `node:${node}`, scope: 'index:announce', aud: 'index', ttlSec: 3600 })
      await createIndexClient(transport, { token }).announce({ address, node, endpoint: target, ttlSec: 600 })
    },
    async get(path, headers = {}, method = 'GET') {
      const res = await transport.request('interop', { method, path, headers })
      const bytes = Buffer.from(await collectBytes(res.body))
      return Object.assign(res, { utf8: bytes.toString('utf8'), bytes })
    },
    adopt(svc: { close(): Promise<void> }) {
      others.push(svc)
    },
    async close() {
      // The drain's read window runs on interop's clock: move a virtual one on.
      if (clock instanceof VirtualClock) await closeOnVirtualTime(clock, interop.close())
      else await interop.close()
      for (const o of others) await o.close()
      await index.close()
      await storage.close()
      await transport.close()
    },
  } as Mesh & { adopt(svc: { close(): Promise<void> }): void }
}

/** Another node's storage in the mesh, mounted as `target`. */
export async function otherStorage(m: Mesh, target: string): Promise<StorageService> {
  const s = await createStorageService({ auth: { keys: m.issuer.keys } })
  m.transport.mount(target, s)
  ;(m as Mesh & { adopt(svc: { close(): Promise<void> }): void }).adopt(s)
  return s
}

/** A provider that serves `inner`'s bytes with the byte at `at` flipped (its GET bodies only; none without `at`), counting its GETs. */
export function flippingProvider(inner: DispatchTarget, at?: number): DispatchTarget & { gets: number } {
  const p = {
    gets: 0,
    async dispatch(req: RonRequest): Promise<RonResponse> {
      const res = await inner.dispatch(req)
      if (req.method !== 'GET' || res.status !== 200) return res
      p.gets++
      const bytes = Buffer.from(await collectBytes(res.body))
      if (at !== undefined) bytes[at] = bytes[at]! ^ 0x01
      return { ...res, body: (async function* () {
        yield bytes.subarray(0, Math.floor(bytes.length / 2))
        yield bytes.subarray(Math.floor(bytes.length / 2))
      })() }
    },
  }
  return p
}

export const text = (s: string): Uint8Array => new TextEncoder().encode(s)
export const addressOfText = (s: string): Address => addressOf(text(s))
