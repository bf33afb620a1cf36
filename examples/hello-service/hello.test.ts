import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { HttpTransport, MemoryTransport, isRonError, throwIfError, type Transport } from '@ron/core'
import { assertConcurrencyDoc, createTestIssuer } from '@ron/core/testing'
import { createHelloService } from './hello-service.js'
import { PREFIX, startApp, type App } from './app.js'

const issuer = createTestIssuer()
const writeToken = issuer.mint({ scope: 'hello:write', aud: 'hello' })

async function exercise(transport: Transport, target: string): Promise<void> {
  const hello = await transport.request(target, { method: 'GET', path: '/hello' })
  expect(hello.status).toBe(200)
  expect(await hello.json()).toEqual({ hello: 'RON' })

  const anonymous = await transport.request(target, { method: 'POST', path: '/echo', body: 'hi' })
  const err = await throwIfError(anonymous).catch((e: unknown) => e)
  expect(isRonError(err, 'Unauthorized')).toBe(true)

  const echo = await transport.request(target, {
    method: 'POST',
    path: '/echo',
    headers: { authorization: `Bearer ${writeToken}`, 'x-corr-id': 'hello-test-1' },
    body: 'ping',
  })
  expect(echo.status).toBe(200)
  expect(echo.headers['x-corr-id']).toBe('hello-test-1')
  expect(await echo.text()).toBe('ping')

  const ready = await transport.request(target, { method: 'GET', path: '/readyz' })
  expect(await ready.json()).toMatchObject({ ready: true, writeReady: true })
}

describe('hello-service example', () => {
  let app: App | undefined
  const transports: Transport[] = []
  afterEach(async () => {
    await app?.close()
    app = undefined
    await Promise.all(transports.splice(0).map((t) => t.close()))
  })

  it('answers /hello and an authorised queued /echo through MemoryTransport', async () => {
    const svc = await createHelloService({ greeting: 'RON', auth: { keys: issuer.keys } })
    const transport = new MemoryTransport()
    transports.push(transport)
    transport.mount('hello', svc)
    try {
      await exercise(transport, 'hello')
    } finally {
      await svc.close()
    }
  })

  it('answers the same through a plain node:http app that mounts it under a prefix, over a real socket', async () => {
    app = await startApp(0, { greeting: 'RON', auth: { keys: issuer.keys } })
    const transport = new HttpTransport({ targets: { hello: `${app.url}${PREFIX}` } })
    transports.push(transport)
    await exercise(transport, 'hello')
    const root = await transport.request(app.url, { method: 'GET', path: '/' })
    expect(await root.text()).toContain(PREFIX)
  })

  it('documents its topology in CONCURRENCY.md (golden test against describe())', async () => {
    const svc = await createHelloService()
    const doc = readFileSync(new URL('./CONCURRENCY.md', import.meta.url), 'utf8')
    expect(() => assertConcurrencyDoc(doc, svc.describe())).not.toThrow()
    await svc.close()
  })

  it('reloads its greeting live, refuses to resize its queue live, and rejects invalid config naming the field', async () => {
    const svc = await createHelloService({ greeting: 'RON' })
    const transport = new MemoryTransport()
    transports.push(transport)
    transport.mount('hello', svc)
    await svc.reload({ greeting: 'again' })
    expect(await (await transport.request('hello', { method: 'GET', path: '/hello' })).json()).toEqual({ hello: 'again' })
    const immutable = await svc.reload({ echoQueue: 99 }).catch((e: unknown) => e)
    expect(isRonError(immutable, 'Malformed')).toBe(true)
    expect((immutable as { details: unknown }).details).toEqual({ path: 'echoQueue', reason: 'immutable' })
    const invalid = await svc.reload({ greeting: '' }).catch((e: unknown) => e)
    expect((invalid as { details: { path: string } }).details.path).toBe('greeting')
    expect(await (await transport.request('hello', { method: 'GET', path: '/hello' })).json()).toEqual({ hello: 'again' })
    await expect(createHelloService({ echoQueue: 0 })).rejects.toSatisfy((e) => isRonError(e, 'Malformed'))
    await svc.close()
  })

  it('reports its topology and stops serving after close', async () => {
    const svc = await createHelloService({ echoQueue: 4, echoWorkers: 1 })
    expect(svc.describe().channels).toEqual([expect.objectContaining({ name: 'echo', kind: 'mpsc', capacity: 4, overflow: 'reject-new' })])
    await svc.close()
    await svc.close()
    const transport = new MemoryTransport()
    transports.push(transport)
    transport.mount('hello', svc)
    const res = await transport.request('hello', { method: 'GET', path: '/hello' })
    expect(res.status).toBe(503)
    const err = await throwIfError(res).catch((e: unknown) => e)
    expect(isRonError(err, 'Closed')).toBe(true)
    expect(res.headers['retry-after']).toBeDefined()
  })
})
