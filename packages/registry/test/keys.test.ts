import { stat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createRegistryService } from '../src/service.js'
import { initRegistrySigner, LOG_KEY_FILE, SIGNER_KEY_FILE } from '../src/keys.js'
import { tempDir } from './helpers.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

describe('node key files', () => {
  it('a fresh node gets its signer key and the log key at 0600, a one-signer set, and the same keys on the next start', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const first = await initRegistrySigner(t.dir, 'node-a')
    expect(first.created).toBe(true)
    expect(first.signers).toEqual({ threshold: 1, signers: [{ id: 'node-a', publicKey: first.key.publicKey }] })
    const svc = await createRegistryService({ dataDir: t.dir, signers: first.signers })
    const logKey = svc.logKey
    await svc.close()
    for (const f of [SIGNER_KEY_FILE, LOG_KEY_FILE]) expect((await stat(join(t.dir, f))).mode & 0o777).toBe(0o600)
    const second = await initRegistrySigner(t.dir, 'ignored-on-reload')
    expect(second.created).toBe(false)
    expect(second.key.publicKey).toBe(first.key.publicKey)
    expect(second.key.id).toBe('node-a')
    const again = await createRegistryService({ dataDir: t.dir, signers: second.signers })
    expect(again.logKey).toBe(logKey)
    await again.close()
    expect(JSON.parse(await readFile(join(t.dir, SIGNER_KEY_FILE), 'utf8'))).toMatchObject({ kty: 'OKP', crv: 'Ed25519', kid: 'node-a' })
  })
})
