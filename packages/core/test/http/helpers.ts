import type { RonRequest, RonResponse } from '../../src/http/index.js'

export interface ReqInit {
  headers?: Record<string, string>
  body?: string | Uint8Array | Uint8Array[] | AsyncIterable<Uint8Array>
  signal?: AbortSignal
  remoteAddress?: string
}

async function* fromChunks(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield await Promise.resolve(c)
}

/** Builds an in-process request. */
export function mkReq(method: string, url: string, init: ReqInit = {}): RonRequest {
  const b = init.body
  const body: AsyncIterable<Uint8Array> =
    b === undefined
      ? fromChunks([])
      : typeof b === 'string'
        ? fromChunks([Buffer.from(b)])
        : b instanceof Uint8Array
          ? fromChunks([b])
          : Array.isArray(b)
            ? fromChunks(b)
            : b
  return {
    method,
    url,
    headers: { ...(init.headers ?? {}) },
    body,
    remoteAddress: init.remoteAddress ?? 'memory',
    signal: init.signal ?? new AbortController().signal,
  }
}

export async function readBody(res: RonResponse): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  for await (const c of res.body) chunks.push(c)
  return Buffer.concat(chunks)
}

/** The `error` object of the SPEC envelope. */
export interface EnvelopeError {
  code: string
  message: string
  retryable: boolean
  corr_id: string
  details: Record<string, unknown>
}

export async function readJson(res: RonResponse): Promise<unknown> {
  return JSON.parse((await readBody(res)).toString('utf8'))
}

/** Asserts the SPEC envelope shape and returns its `error` object. */
export function expectEnvelope(body: unknown, code: string, corrId?: string): EnvelopeError {
  const e = (body as { error?: EnvelopeError } | undefined)?.error
  if (e === undefined) throw new Error(`not an error envelope: ${JSON.stringify(body)}`)
  const keys = Object.keys(e).sort()
  if (keys.join(',') !== 'code,corr_id,details,message,retryable') throw new Error(`bad envelope keys ${keys.join(',')}`)
  if (e.code !== code) throw new Error(`expected ${code}, got ${e.code}: ${e.message}`)
  if (typeof e.message !== 'string' || typeof e.retryable !== 'boolean' || typeof e.details !== 'object') {
    throw new Error('bad envelope field types')
  }
  if (corrId !== undefined && e.corr_id !== corrId) throw new Error(`corr_id ${e.corr_id} != ${corrId}`)
  return e
}
