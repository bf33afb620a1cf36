/**
 * Profile cases of `POST /v1/passport/verify` (the passport suite's benchmark 4): the server in
 * its own process, autocannon -c50 from this process for `seconds` (default 5) after a 1 s
 * warm-up, the server profiled only while the load runs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { exportIssuerKey, generateIssuerKey, signToken } from '@ron/core'
import { printProfile, profileDir } from '../../lib/cpuprofile.js'
import { spawnServer } from '../../lib/process.js'

export const cases: Record<string, string> = {
  passport: 'the passport service (servers/passport/passport.ts) [seconds=5]',
  bare: 'bare node:http + core verifier (servers/passport/bare-verify.ts) [seconds=5]',
}

export async function run(which: string, args: string[]): Promise<void> {
  const seconds = Number(args[0] ?? 5)
  const profDir = await profileDir()
  const root = await mkdtemp(join(tmpdir(), 'ron-prof-passport-'))
  const key = generateIssuerKey({ epoch: 1 })
  const keyFile = join(root, 'issuer.json')
  await writeFile(keyFile, exportIssuerKey(key), { mode: 0o600 })
  const token = signToken(key, { sub: 'bench', aud: ['storage'], scope: 'storage:write storage:read', ttlSec: 3600, ron: { maxBytes: 1 << 20 } })
  const server = await spawnServer(which, which === 'bare' ? './servers/passport/bare-verify.ts' : './servers/passport/passport.ts', { keyFile })
  try {
    const body = JSON.stringify({ token, aud: 'storage' })
    const load = (duration: number) => autocannon({ url: `${server.url}/v1/passport/verify`, method: 'POST', connections: 50, duration, headers: { 'content-type': 'application/json' }, body })
    await load(1) // warm up
    await server.profStart()
    const r = await load(seconds)
    const file = await server.profStop(join(profDir, `passport-verify-${which}-${Date.now()}.cpuprofile`))
    console.log(`${which}: ${r.requests.average.toFixed(0)} req/s avg, p50 ${r.latency.p50} ms, non2xx ${r.non2xx}, errors ${r.errors}`)
    printProfile(file, undefined, { self: 35, total: 60 })
  } finally {
    await server.stop()
    await rm(root, { recursive: true, force: true })
  }
}
