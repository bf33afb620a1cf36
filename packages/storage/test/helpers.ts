 
import { MemoryTransport, addressOf, collectBytes, splitRuntime } from '@ron/core'
import type { RonService, TransportResponse } from '@ron/core'
import { createTestIssuer, metricValue as readMetric, tempDir as coreTempDir } from '@ron/core/testing'
import type { TestIssuer } from '@ron/core/testing'
import { createStorageClient, createStorageService } from '../src/index.js'
import { STORAGE_RUNTIME_KEYS } from '../src/config.js'
import type { StorageClient, StorageConfig, StorageRuntime, StorageService } from '../src/index.js'

/** Deterministic pseudo-random bytes. */
export function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n)
  let x = seed >>> 0 || 1
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 0xff
  }
  return out
}

/** The address of some bytes (core's {@link addressOf}). */
export const addressOfBytes = addressOf

/** Reads a body to the end (core's {@link collectBytes}). */
export const readAll = collectBytes

/** A temporary directory (core's shared double). */
export function tempDir(prefix = 'ron-storage-'): ReturnType<typeof coreTempDir> {
  return coreTempDir(prefix)
}

/** What a test node gets: config keys and runtime objects in one object, split by {@link cluster}. */
export type NodeOptions = StorageConfig & StorageRuntime

export interface Node {
  name: string
  svc: StorageService
  /** storage:write */
  client: StorageClient
  /** storage:write storage:admin */
  admin: StorageClient
  anon: StorageClient
}

export interface Cluster {
  transport: MemoryTransport
  issuer: TestIssuer
  tokens: { write: string; admin: string; read: string; replicate: string }
  nodes: Node[]
  node(name?: string): Node
  request(target: string, method: string, path: string, headers?: Record<string, string>, body?: Uint8Array | string): Promise<TransportResponse>
  close(): Promise<void>
}

/** Starts `names.length` storage nodes on one MemoryTransport, each peering with the others. */
export async function cluster(
  names: string[] = ['storage'],
  options: (name: string) => NodeOptions = () => ({}),
): Promise<Cluster> {
  const transport = new MemoryTransport()
  const issuer = createTestIssuer()
  const tokens = {
    write: issuer.mint({ scope: 'storage:write storage:read', aud: 'storage' }),
    admin: issuer.mint({ scope: 'storage:write storage:read storage:admin', aud: 'storage' }),
    read: issuer.mint({ scope: 'storage:read', aud: 'storage' }),
    replicate: issuer.mint({ scope: 'storage:replicate', aud: 'storage', sub: 'node:peer' }),
  }
  const replicate = tokens.replicate
  const nodes: Node[] = []
  for (const name of names) {
    const peers = names.filter((n) => n !== name)
    const { data, runtime } = splitRuntime<StorageRuntime>(options(name), undefined, STORAGE_RUNTIME_KEYS)
    const svc = await createStorageService(
      { advertise: name, ...(peers.length > 0 ? { peers } : {}), repair: { auto: false }, drainReadWindowMs: 0, ...data },
      transport,
      { auth: { keys: issuer.keys }, ...(peers.length > 0 ? { tokens: { token: () => replicate } } : {}), ...runtime },
    )
    transport.mount(name, svc)
    nodes.push({
      name,
      svc,
      client: createStorageClient(transport, { target: name, token: tokens.write }),
      admin: createStorageClient(transport, { target: name, token: tokens.admin }),
      anon: createStorageClient(transport, { target: name }),
    })
  }
  return {
    transport,
    issuer,
    tokens,
    nodes,
    node: (name) => (name === undefined ? nodes[0]! : nodes.find((n) => n.name === name)!),
    request: (target, method, path, headers = {}, body) =>
      transport.request(target, { method, path, headers, ...(body === undefined ? {} : { body }) }),
    close: async () => {
      for (const n of nodes) await n.svc.close()
      await transport.close()
    },
  }
}

/**
 * Sum of a metric's samples whose labels include `labels`, read from the service's exposition text
 * (a histogram counts its observations, `<name>_count`); 0 when there is none.
 */
export async function metricValue(svc: Pick<RonService, 'metricsText'>, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await svc.metricsText()
  return readMetric(text, name, labels) ?? readMetric(text, `${name}_count`, labels) ?? 0
}

/** A promise with its resolver. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

export async function* once(b: Uint8Array): AsyncGenerator<Uint8Array> {
  yield b
}
