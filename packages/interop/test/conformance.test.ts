/**
 * Interop runs core's service conformance suite (issue 21): lifecycle, built-ins, drain with its
 * read window (webhooks, uploads and the admin writes shed first), limits, CORS, reload, error
 * envelopes, README metrics, CONCURRENCY.md and the exported surface. The write is an admin
 * rotation (`interop:admin`); the read the admin listing; the 413 a JSON body over `http.jsonBodyLimit`.
 */
import { describe, it } from 'vitest'
import { createTestIssuer, readRepoFile, serviceConformance } from '@ron/core/testing'
import * as entry from '../src/index.js'
import { createInteropService } from '../src/index.js'

const read = readRepoFile
const pkg = JSON.parse(read('packages/interop/package.json')) as { version: string }
const issuer = createTestIssuer()
const admin = { authorization: `Bearer ${issuer.mint({ aud: ['interop'], scope: ['interop:admin'] })}` }
const json = { 'content-type': 'application/json' }

describe('interop conformance (core service contract)', () => {
  for (const check of serviceConformance({
    id: 'interop',
    create: (config, runtime) => createInteropService(config, undefined, { ...runtime, auth: { keys: issuer.keys } }),
    read: { method: 'GET', path: '/admin/credentials', headers: admin },
    write: { method: 'PUT', path: '/admin/webhooks/github/secret', headers: { ...admin, ...json }, body: JSON.stringify({ secret: 'conformance-secret-0123456789' }) },
    overLimit: {
      config: { http: { jsonBodyLimit: 64 } },
      request: { method: 'PUT', path: '/admin/webhooks/github/secret', headers: { ...admin, ...json }, body: JSON.stringify({ secret: 'x'.repeat(128) }) },
    },
    docs: { readme: read('packages/interop/README.md'), concurrency: read('packages/interop/docs/CONCURRENCY.md'), errors: read('docs/errors.md') },
    version: pkg.version,
    surface: { entry: '@ron/interop', exports: entry, apiReport: read('packages/interop/api-report.md') },
  })) {
    it(check.name, () => check.run())
  }
})
