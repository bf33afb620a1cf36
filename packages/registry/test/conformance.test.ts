/**
 * The registry runs core's service conformance suite (issue 21): lifecycle, built-ins, drain with
 * its read window, limits, CORS, reload, error envelopes, README metrics, CONCURRENCY.md and the
 * exported surface.
 */
import { describe, it } from 'vitest'
import { createTestIssuer, readRepoFile, serviceConformance } from '@ron/core/testing'
import * as entry from '../src/index.js'
import { createRegistryService } from '../src/index.js'
import { ALL_SCOPES, ORIGIN, payload, setOf, signers } from './helpers.js'

const read = readRepoFile
const pkg = JSON.parse(read('packages/registry/package.json')) as { version: string }
const issuer = createTestIssuer()
const writeToken = issuer.mint({ aud: ['registry'], scope: ALL_SCOPES })
const keys = signers(3)
const auth = { authorization: `Bearer ${writeToken}`, 'content-type': 'application/json' }

describe('registry conformance (core service contract)', () => {
  for (const check of serviceConformance({
    id: 'registry',
    create: (config, runtime) => createRegistryService({ origin: ORIGIN, signers: setOf(keys, 2), ...config }, undefined, { ...runtime, auth: { keys: issuer.keys } }),
    // HEAD of the log: cheap, public.
    read: { method: 'GET', path: '/registry/head' },
    write: { method: 'POST', path: '/registry/proposals', headers: auth, body: JSON.stringify({ payload: payload(1) }) },
    overLimit: { config: { http: { jsonBodyLimit: 64 } }, request: { method: 'POST', path: '/registry/proposals', headers: auth, body: JSON.stringify({ payload: payload(2) }) } },
    docs: { readme: read('packages/registry/README.md'), concurrency: read('packages/registry/docs/CONCURRENCY.md'), errors: read('docs/errors.md') },
    version: pkg.version,
    surface: { entry: '@ron/registry', exports: entry, apiReport: read('packages/registry/api-report.md') },
  })) {
    it(check.name, () => check.run())
  }
})
