import { mkdtemp, rm, readFile, writeFile, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryTransport, addressOf, collectBytes } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '../packages/storage/src/index.js'

function bytes(n: number, seed = 7): Uint8Array { const o = new Uint8Array(n); let x = seed; for (let i = 0; i < n; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; o[i] = x & 0xff } return o }

const dir = await mkdtemp(join(tmpdir(), 'rev-'))
const transport = new MemoryTransport()
const issuer = createTestIssuer()
const svc = await createStorageService({ nodeId: 'storage', dataDir: dir, auth: { keys: issuer.keys }, repair: { auto: false } }, transport)
transport.mount('storage', svc)
const req = (method: string, path: string, headers: Record<string, string> = {}, body?: Uint8Array) => transport.request('storage', { method, path, headers, ...(body ? { body } : {}) })
const write = issuer.mint({ scope: 'storage:write storage:read', aud: 'storage' })
// 1. caveat bypass
const data = bytes(200_000)
const addr = addressOf(data)
let r = await req('PUT', '/o', { authorization: `Bearer ${write}` }, data); console.log('put', r.status, await r.text())
const restricted = issuer.mint({ scope: 'storage:admin storage:write', aud: 'storage', ron: { methods: ['GET'], pathPrefix: '/o/b3:0000' } } as any)
r = await req('PUT', '/o', { authorization: `Bearer ${restricted}` }, bytes(10, 3)); console.log('restricted PUT (expect 403):', r.status); await r.dump()
r = await req('POST', `/o/${addr}/pin`, { authorization: `Bearer ${restricted}` }); console.log('restricted pin (expect 403):', r.status); await r.dump()
r = await req('DELETE', `/o/${addr}/pin`, { authorization: `Bearer ${restricted}` }); console.log('restricted unpin (expect 403):', r.status); await r.dump()
r = await req('DELETE', `/o/${addr}`, { authorization: `Bearer ${restricted}` }); console.log('restricted DELETE (expect 403):', r.status); await r.dump()

// 2. re-PUT does not heal a corrupt copy
r = await req('PUT', '/o', { authorization: `Bearer ${write}` }, data); console.log('put again', r.status); await r.dump()
const p = (svc.store as any).pathsOf(addr)
const buf = await readFile(p.data); buf[100] ^= 1; await writeFile(p.data, buf)
r = await req('GET', `/o/${addr}`); try { await r.bytes(); console.log('GET corrupt: full?') } catch (e) { console.log('GET corrupt -> truncated', (e as Error).message) }
r = await req('PUT', '/o', { authorization: `Bearer ${write}` }, data); console.log('re-PUT good bytes:', r.status, await r.text())
r = await req('GET', `/o/${addr}`); try { const b = await r.bytes(); console.log('GET after re-PUT ok, len', b.length) } catch (e) { console.log('GET after re-PUT STILL FAILS:', (e as Error).message) }

// 3. GET/DELETE race: table missing after data opened -> IntegrityFailed + suspect
const d2 = bytes(1000, 9); const a2 = addressOf(d2)
r = await req('PUT', '/o', { authorization: `Bearer ${write}` }, d2); await r.dump()
const p2 = (svc.store as any).pathsOf(a2)
// simulate delete landing between open(data) and readFile(table)
await unlink(p2.table)
r = await req('GET', `/o/${a2}`); console.log('GET while table gone (data still there):', r.status, (await r.text()).slice(0, 120))
await unlink(p2.data)
r = await req('GET', `/o/${a2}/status`); console.log('status after delete:', r.status, (await r.text()).slice(0, 300))
const plan = await svc.runRepair({ dryRun: true }); console.log('plan unrepairable', JSON.stringify(plan.unrepairable))

await svc.close(); await rm(dir, { recursive: true, force: true })
