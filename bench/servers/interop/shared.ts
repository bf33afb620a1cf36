/** What the interop bench's servers, its suite and its profile cases share. */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestIssuer, type TestIssuer } from '@ron/core/testing'
import { createStorageService, type StorageService } from '@ron/storage'

/** The GitHub webhook secret every interop server accepts. */
export const SECRET = 'bench-webhook-secret'
/** The API key of the client `bench` (for `POST /put`). */
export const API_KEY = 'bench-api-key-0123456789'

/** A storage service on the filesystem backend in a fresh temporary directory, with a writer's token. */
export async function fsStorage(): Promise<{ dir: string; issuer: TestIssuer; storage: StorageService; token: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'ron-bench-interop-'))
  const issuer = createTestIssuer()
  const storage = await createStorageService({ dataDir: dir, auth: { keys: issuer.keys } })
  const token = issuer.mint({ sub: 'node:bench', scope: ['storage:write'], aud: ['storage'], ttlSec: 86_400, ron: { maxBytes: 1 << 30 } })
  return { dir, issuer, storage, token }
}
