/**
 * What the index bench's servers, its suite and its profile cases share: the resolved address,
 * the answer the bare baseline gives, the manifests name writes bind to, and a few helpers.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { addressOf } from '@ron/core'
import type { DispatchTarget, RonRequest, RonResponse } from '@ron/core'
import type { TestIssuer } from '@ron/core/testing'

/** The address every resolve case asks for. */
export const ADDRESS = addressOf(new TextEncoder().encode('ron index bench content'))
/** What the index answers for {@link ADDRESS} (the bare baseline answers the same JSON). */
export const ANSWER = { key: ADDRESS, providers: [{ node: 'node-a', endpoint: 'http://node-a:7701', score: 1 }], source: 'cache', ttlSec: 3600 }

/** The 16 manifests name writes bind to, as their texts (the same in every process). */
export function manifestTexts(): string[] {
  return Array.from({ length: 16 }, (_, i) => JSON.stringify({ content: addressOf(new TextEncoder().encode(`c${i}`)), size: 2, type: 'text/plain' }))
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

export const closeServer = (server: Server): Promise<void> => new Promise<void>((r) => server.close(() => r()))

/** A fresh temporary directory under `options.dir` (or the system's temp directory). */
export const tempDir = (options: Record<string, unknown>): Promise<string> => mkdtemp(join(options.dir === undefined ? tmpdir() : (options.dir as string), 'ron-bench-index-'))

/** Serves stored manifests (`GET /o/:addr`) to the index under test, in its process. */
export class ManifestStore implements DispatchTarget {
  readonly objects = new Map<string, Uint8Array>()
  dispatch(req: RonRequest): Promise<RonResponse> {
    const bytes = this.objects.get(req.url.slice('/o/'.length))
    return Promise.resolve({
      status: bytes === undefined ? 404 : 200,
      headers: { 'content-length': String(bytes?.byteLength ?? 0) },
      body: (async function* () {
        if (bytes !== undefined) yield bytes
      })(),
    })
  }
}

/** Announces node-a as a provider of {@link ADDRESS} to the index at `url`. */
export async function announceTo(issuer: TestIssuer, url: string): Promise<void> {
  const announce = issuer.mint({ scope: 'index:announce', aud: 'index', ttlSec: 86_400, sub: 'node:node-a' })
  const dto = JSON.stringify({ address: ADDRESS, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 86_400 })
  const r = await fetch(`${url}/providers`, { method: 'POST', headers: { authorization: `Bearer ${announce}`, 'content-type': 'application/json' }, body: dto })
  if (r.status !== 200) throw new Error(`announce: ${r.status} ${await r.text()}`)
}
