/**
 * Profiles `POST /v1/passport/verify` (issue 11, benchmark 4): `npx tsx bench/profile-passport.ts
 * [passport|bare] [seconds]` starts the server in its own process (the factory of
 * `passport.bench.ts`), drives it with autocannon -c50 from this process, profiles the server
 * only while the load runs, and prints self and inclusive time (the .cpuprofile stays in
 * `$TMPDIR/ron-profiles/`).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { exportIssuerKey, generateIssuerKey, signToken } from '@ron/core'
import { printProfile } from './cpuprofile.js'
import { spawnServer } from './process.js'

const mode = process.argv[2] ?? 'passport'
const seconds = Number(process.argv[3] ?? 5)
const profDir = join(tmpdir(), 'ron-profiles')
await mkdir(profDir, { recursive: true })
const root = await mkdtemp(join(tmpdir(), 'ron-prof-passport-'))
const key = generateIssuerKey({ epoch: 1 })
const keyFile = join(root, 'issuer.json')
await writeFile(keyFile, exportIssuerKey(key), { mode: 0o600 })
const token = signToken(key, { sub: 'bench', aud: ['storage'], scope: 'storage:write storage:read', ttlSec: 3600, ron: { maxBytes: 1 << 20 } })
const server = await spawnServer(mode, './passport.bench.ts', { mode, keyFile })
try {
  const body = JSON.stringify({ token, aud: 'storage' })
  const load = (duration: number) =>
    autocannon({ url: `${server.url}/v1/passport/verify`, method: 'POST', connections: 50, duration, headers: { 'content-type': 'application/json' }, body })
  await load(1) // warm up
  await server.profStart()
  const r = await load(seconds)
  const file = await server.profStop(join(profDir, `passport-verify-${mode}-${Date.now()}.cpuprofile`))
  console.log(`${mode}: ${r.requests.average.toFixed(0)} req/s avg, p50 ${r.latency.p50} ms, non2xx ${r.non2xx}, errors ${r.errors}`)
  printProfile(file, undefined, { self: 35, total: 60 })
} finally {
  await server.stop()
  await rm(root, { recursive: true, force: true })
}
