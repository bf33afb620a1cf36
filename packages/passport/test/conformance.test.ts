/**
 * Passport runs core's service conformance suite (issue 21, docs/service-contract.md §5):
 * lifecycle, built-ins, drain with its read window, limits, CORS, reload, error envelopes,
 * README metrics, CONCURRENCY.md and the exported surface.
 */
import { describe, it } from 'vitest'
import { readRepoFile, serviceConformance } from '@ron/core/testing'
import * as entry from '../src/index.js'
import { createPassportService } from '../src/index.js'
import { ADMIN_POLICY } from './helpers.js'

const read = readRepoFile
const pkg = JSON.parse(read('packages/passport/package.json')) as { version: string }
// The drain refuses a write before it authenticates, and the error-envelope check sends it
// without a token: any bearer does.
const write = { method: 'POST', path: '/v1/passport/revoke', headers: { authorization: 'Bearer not-a-token', 'content-type': 'application/json' }, body: '{"jti":"conformance"}' }

describe('passport conformance (core service contract)', () => {
  for (const check of serviceConformance({
    id: 'passport',
    create: (config, runtime) => createPassportService({ policy: ADMIN_POLICY, ...config }, undefined, runtime),
    read: { method: 'GET', path: '/v1/passport/keys' },
    write,
    overLimit: {
      config: { http: { jsonBodyLimit: 16 } },
      request: { method: 'POST', path: '/v1/passport/verify', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'x'.repeat(64) }) },
    },
    docs: { readme: read('packages/passport/README.md'), concurrency: read('packages/passport/docs/CONCURRENCY.md'), errors: read('docs/errors.md') },
    version: pkg.version,
    surface: { entry: '@ron/passport', exports: entry, apiReport: read('packages/passport/api-report.md') },
  })) {
    it(check.name, () => check.run())
  }
})
