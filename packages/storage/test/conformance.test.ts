/**
 * Storage runs core's service conformance suite (issue 21: the reference service of the
 * contract): lifecycle, built-ins, drain with its read window, limits, CORS, reload, error
 * envelopes, README metrics, CONCURRENCY.md and the exported surface.
 */
import { describe, it } from 'vitest'
import { addressOf } from '@ron/core'
import { createTestIssuer, readRepoFile, serviceConformance } from '@ron/core/testing'
import * as entry from '../src/index.js'
import { createStorageService } from '../src/index.js'

const read = readRepoFile
const pkg = JSON.parse(read('packages/storage/package.json')) as { version: string }
const issuer = createTestIssuer()
const writeToken = issuer.mint({ aud: ['storage'], scope: ['storage:write'] })
const absent = addressOf(new TextEncoder().encode('conformance: not stored'))

describe('storage conformance (core service contract)', () => {
  for (const check of serviceConformance({
    id: 'storage',
    create: (config, runtime) => createStorageService(config, undefined, { ...runtime, auth: { keys: issuer.keys } }),
    // A read of an object that is not there: 404, cheap, public.
    read: { method: 'GET', path: `/o/${absent}` },
    write: { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${writeToken}` }, body: 'conformance write' },
    overLimit: { config: { maxObjectBytes: 16 }, request: { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${writeToken}` }, body: 'x'.repeat(64) } },
    docs: { readme: read('packages/storage/README.md'), concurrency: read('packages/storage/docs/CONCURRENCY.md'), errors: read('docs/errors.md') },
    version: pkg.version,
    surface: { entry: '@ron/storage', exports: entry, apiReport: read('packages/storage/api-report.md') },
  })) {
    it(check.name, () => check.run())
  }
})
