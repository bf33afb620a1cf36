import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MemoryTransport } from '@ron/core'
import { createIndexService } from '../src/index.js'

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }

describe('/version', () => {
  it('reports the version in package.json unless the config names one', async () => {
    for (const [config, expected] of [
      [{}, pkg.version],
      [{ version: '9.9.9-embedder' }, '9.9.9-embedder'],
    ] as const) {
      const t = new MemoryTransport()
      const svc = await createIndexService({ ...config }, t)
      try {
        t.mount('index', svc)
        const res = await t.request('index', { method: 'GET', path: '/version' })
        expect(res.status).toBe(200)
        expect(await res.json()).toEqual({ service: 'index', version: expected, node: process.version })
      } finally {
        await svc.close()
        await t.close()
      }
    }
  })
})
