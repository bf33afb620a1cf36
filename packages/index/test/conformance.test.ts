/**
 * The index runs core's service conformance suite (issue 21): lifecycle, built-ins, the drain
 * (no read window: unready as a whole at its start), limits, CORS, reload, error envelopes,
 * README metrics, CONCURRENCY.md and the exported surface.
 */
import { describe, it } from 'vitest'
import { addressOf } from '@ron/core'
import { createTestIssuer, readRepoFile, serviceConformance } from '@ron/core/testing'
import * as entry from '../src/index.js'
import { createIndexService } from '../src/index.js'

const read = readRepoFile
const pkg = JSON.parse(read('packages/index/package.json')) as { version: string }
const issuer = createTestIssuer()
const announceToken = issuer.mint({ sub: 'node:n1', aud: ['index'], scope: ['index:announce'] })
const absent = addressOf(new TextEncoder().encode('conformance: not announced'))
const announce = (endpoint: string): string => JSON.stringify({ address: absent, node: 'n1', endpoint, ttlSec: 60 })
const json = { authorization: `Bearer ${announceToken}`, 'content-type': 'application/json' }

describe('index conformance (core service contract)', () => {
  for (const check of serviceConformance({
    id: 'index',
    create: (config, runtime) => createIndexService({ amnesia: true, ...config }, undefined, { ...runtime, auth: { keys: issuer.keys } }),
    // An address nobody announced: 404, cheap, public.
    read: { method: 'GET', path: `/resolve/${absent}` },
    // An announcement by the node itself, of an endpoint that is a transport target name.
    write: { method: 'POST', path: '/providers', headers: json, body: announce('storage') },
    overLimit: { config: { http: { jsonBodyLimit: 16 } }, request: { method: 'POST', path: '/providers', headers: json, body: announce('storage') } },
    docs: { readme: read('packages/index/README.md'), concurrency: read('packages/index/docs/CONCURRENCY.md'), errors: read('docs/errors.md') },
    version: pkg.version,
    surface: { entry: '@ron/index', exports: entry, apiReport: read('packages/index/api-report.md') },
    readWindow: false,
  })) {
    it(check.name, () => check.run())
  }
})
