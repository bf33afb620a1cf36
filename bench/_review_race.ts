import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryTransport, addressOf } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '../packages/storage/src/index.js'
const dir = await mkdtemp(join(tmpdir(), 'rev-'))
const transport = new MemoryTransport()
const issuer = createTestIssuer()
const svc = await createStorageService({ nodeId: 'storage', dataDir: dir, auth: { keys: issuer.keys }, repair: { auto: false } }, transport)
transport.mount('storage', svc)
const admin = issuer.mint({ scope: 'storage:admin storage:write storage:read', aud: 'storage' })
const req = (method: string, path: string, body?: Uint8Array) => transport.request('storage', { method, path, headers: { authorization: `Bearer ${admin}` }, ...(body ? { body } : {}) })
const data = new Uint8Array(5000).fill(3); const addr = addressOf(data)
const counts: Record<string, number> = {}
for (let i = 0; i < 300; i++) { if (i % 20 === 0) console.log("iter", i, counts)
  const p = await req("PUT", "/o", data); console.error("put", p.status); await p.dump()
  const gets = Array.from({ length: 8 }, () => req('GET', `/o/${addr}`).then(async (r) => { await r.dump().catch(() => {}); return r.status }))
  const del = req('DELETE', `/o/${addr}`).then(async (r) => { await r.dump(); return r.status })
  for (const s of await Promise.all(gets)) counts[s] = (counts[s] ?? 0) + 1
  await del
}
console.log('GET statuses during concurrent DELETE:', counts)
const st = await req('GET', `/o/${addr}/status`); console.log('status', st.status, (await st.text()).slice(0, 200))
await svc.close(); await rm(dir, { recursive: true, force: true })
