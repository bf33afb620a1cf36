/**
 * Shared test doubles: a temporary directory that cleans up after itself, a metrics sink that
 * records everything, and a service started on a real loopback socket.
 *
 * @module
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve, type RonServer, type ServeOptions } from '../http/serve.js'
import type { Labels, MetricsSink } from '../metrics-sink.js'
import type { RonService } from '../service/types.js'
import { HttpTransport } from '../transport/http.js'

/** A temporary directory; `cleanup()` (or `await using`) removes it and everything in it. */
export interface TempDir {
  readonly dir: string
  /** Removes the directory (idempotent); a property, so `const { dir, cleanup } = await tempDir()` works. */
  readonly cleanup: () => Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Creates a fresh directory under the OS temp directory.
 *
 * @example
 * ```ts
 * await using tmp = await tempDir('ron-storage-')
 * const svc = await createStorageService({ dataDir: tmp.dir })
 * ```
 */
export async function tempDir(prefix = 'ron-test-'): Promise<TempDir> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  let done: Promise<void> | undefined
  const cleanup = (): Promise<void> => (done ??= rm(dir, { recursive: true, force: true }))
  return { dir, cleanup, [Symbol.asyncDispose]: cleanup }
}

/** A {@link MetricsSink} that remembers everything, for assertions. */
export class RecordingMetrics implements MetricsSink {
  /** Counter totals by `name{label=value,…}` key. */
  readonly counters = new Map<string, number>()
  /** Last gauge values by key. */
  readonly gauges = new Map<string, number>()
  /** Every gauge set, in order. */
  readonly gaugeHistory: { key: string; value: number }[] = []
  /** Every observation, in order. */
  readonly observations: { key: string; value: number }[] = []

  /** The key of a series: `name{a=1,b=2}` with labels sorted. */
  static key(name: string, labels?: Labels): string {
    const l = labels
      ? Object.entries(labels)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => `${k}=${v}`)
          .join(',')
      : ''
    return `${name}{${l}}`
  }

  inc(name: string, labels?: Labels, by = 1): void {
    const k = RecordingMetrics.key(name, labels)
    this.counters.set(k, (this.counters.get(k) ?? 0) + by)
  }

  set(name: string, labels: Labels | undefined, value: number): void {
    const k = RecordingMetrics.key(name, labels)
    this.gauges.set(k, value)
    this.gaugeHistory.push({ key: k, value })
  }

  observe(name: string, labels: Labels | undefined, value: number): void {
    this.observations.push({ key: RecordingMetrics.key(name, labels), value })
  }

  /** A counter's total (0 when never counted). */
  counter(name: string, labels?: Labels): number {
    return this.counters.get(RecordingMetrics.key(name, labels)) ?? 0
  }

  /** A gauge's last value. */
  gauge(name: string, labels?: Labels): number | undefined {
    return this.gauges.get(RecordingMetrics.key(name, labels))
  }
}

/** A service listening on a real loopback socket. */
export interface ServiceOnSocket {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly server: RonServer
  /** An {@link HttpTransport} whose target `service` is this URL. */
  readonly transport: HttpTransport
  /** Closes the transport and the listener (not the service: close it yourself, first). */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Serves `service` with `serve()` on `127.0.0.1`, port 0, with the service's own listener
 * policy, and an {@link HttpTransport} to it.
 *
 * @example
 * ```ts
 * const svc = await createStorageService({}, undefined, { auth })
 * const s = await startOnSocket(svc)
 * const res = await s.transport.request('service', { method: 'GET', path: '/healthz' })
 * await svc.close()
 * await s.close()
 * ```
 */
export async function startOnSocket(service: Pick<RonService, 'handle'> & { readonly listener?: RonService['listener'] }, options: ServeOptions = {}): Promise<ServiceOnSocket> {
  const server = await serve(service, { port: 0, ...options })
  const transport = new HttpTransport({ targets: { service: server.url } })
  let done: Promise<void> | undefined
  const close = (): Promise<void> =>
    (done ??= (async () => {
      await transport.close()
      await server.close()
    })())
  return { url: server.url, server, transport, close, [Symbol.asyncDispose]: close }
}
