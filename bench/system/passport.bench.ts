/**
 * Passport benchmarks (issue 11 item 7), each beside its baseline:
 *
 * 1. first verification of a token (core verifier, cache off) vs jose `jwtVerify` — the
 *    signature dominates, goal ≥ 0.95×;
 * 2. repeated verification of the same token (core verifier's cache; revocation, expiry and key
 *    retirement still checked) vs jose — goal ≥ 5×;
 * 3. issuance: core `signToken` and passport's full issuance path (policy-free service token
 *    through the issue pool and the KMS guard) vs jose `SignJWT`;
 * 4. `POST /v1/passport/verify` req/s: passport (a full service, its own process) vs a bare
 *    `node:http` handler doing the same verification (its own process), autocannon -c50 from
 *    the parent — goal ≥ 0.7×;
 * 5. revocation propagation on real time: passport in its own process, a follower
 *    (`createRevocationFeed`, default 1 s poll, 5 s bound; then with the SSE stream) over HTTP
 *    in the parent.
 *
 * Servers: `servers/passport/passport.ts` and `bare-verify.ts`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { SignJWT, importJWK, jwtVerify } from 'jose'
import {
  HttpTransport,
  RevocationSet,
  createRevocationFeed,
  createTokenVerifier,
  exportIssuerKey,
  generateIssuerKey,
  signToken,
  staticKeySource,
} from '@ron/core'
import { createPassportClient, createPassportService } from '@ron/passport'
import { CpuPerRequest, FULL, alternate, compare, printRounds, report, spread } from '../lib/harness.js'
import { spawnServer } from '../lib/process.js'
import { POLICY } from '../servers/passport/shared.js'


export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ron-bench-passport-'))
  const stops: Array<{ stop(): Promise<void> }> = []
  try {
    const key = generateIssuerKey({ epoch: 1 })
    const keyFile = join(dir, 'issuer.json')
    writeFileSync(keyFile, exportIssuerKey(key), { mode: 0o600 })
    const token = signToken(key, { sub: 'bench', aud: ['storage'], scope: 'storage:write storage:read', ttlSec: 3600, ron: { maxBytes: 1 << 20 } })
    const required = { audience: 'storage', scope: 'storage:write' }
    const revocations = new RevocationSet()
    for (let i = 0; i < 1000; i++) revocations.add(`revoked-${i}`, Math.floor(Date.now() / 1000) + 3600)
    const joseKey = await importJWK(key.publicJwk, 'EdDSA')
    const joseVerify = { name: 'jose jwtVerify (EdDSA, aud check)', fn: () => jwtVerify(token, joseKey, { audience: 'storage', algorithms: ['EdDSA'] }) }

    // 1. First verification: every call is a token never seen (cache off).
    const cold = createTokenVerifier({ keys: staticKeySource([key]), revocations, cache: false })
    const first = await compare(joseVerify, [{ name: 'ron verifier, first sight (cache off)', fn: () => cold.verify(token, required) }], { ops: FULL ? 5000 : 2000, rounds: FULL ? 7 : 5 })
    report('First verification of a token vs jose (goal >= 0.95x)', first)

    // 2. Repeated verification of the same bearer token.
    const warm = createTokenVerifier({ keys: staticKeySource([key]), revocations })
    await warm.verify(token, required)
    const again = await compare(joseVerify, [{ name: 'ron verifier, repeated (cache on)', fn: () => warm.verify(token, required) }], { ops: FULL ? 20_000 : 5000, rounds: FULL ? 7 : 5 })
    report('Repeated verification of the same token vs jose (goal >= 5x)', again)

    // 3. Issuance.
    const passport = await createPassportService({ issuerKeyFile: keyFile, policy: POLICY })
    try {
      const signJwt = {
        name: 'jose SignJWT (EdDSA)',
        fn: () =>
          new SignJWT({ scope: 'storage:write' })
            .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: key.kid })
            .setIssuer('passport')
            .setSubject('bench')
            .setAudience(['storage'])
            .setIssuedAt()
            .setExpirationTime('10m')
            .setJti('j')
            .sign(key.privateKey),
      }
      const issue = await compare(
        signJwt,
        [
          { name: 'core signToken', fn: () => signToken(key, { sub: 'bench', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 }) },
          { name: 'passport issuance (pool + KMS guard)', fn: () => passport.mintServiceToken({ sub: 'bench', aud: 'storage', scope: ['storage:write'], ttlSec: 600 }) },
        ],
        { ops: FULL ? 5000 : 1500, rounds: FULL ? 7 : 5 },
      )
      report('Issue ops/s vs jose SignJWT', issue)
    } finally {
      await passport.close()
    }

    // 4. POST /v1/passport/verify, out of process.
    const servers = [
      await spawnServer('bare node:http + core verifier', './servers/passport/bare-verify.ts', { keyFile }),
      await spawnServer('ron passport service', './servers/passport/passport.ts', { keyFile }),
    ]
    stops.push(...servers)
    const body = JSON.stringify({ token, aud: 'storage' })
    const seconds = FULL ? 5 : 1
    const rounds = FULL ? 7 : 5
    const cpu = new CpuPerRequest(servers.length)
    const rps = await alternate(
      servers.map((s, i) => ({
        name: s.name,
        measure: async () => {
          const run = () => autocannon({ url: `${s.url}/v1/passport/verify`, method: 'POST', connections: 50, duration: seconds, headers: { 'content-type': 'application/json' }, body })
          const r = await cpu.around(i, s.pid, run, (x) => x.requests.total)
          if (r.errors > 0 || r.non2xx > 0) throw new Error(`${s.name}: ${r.errors} errors, ${r.non2xx} non-2xx`)
          return r.requests.average
        },
      })),
      { rounds },
    )
    printRounds(`POST /v1/passport/verify, autocannon -c50 ${seconds} s per round (goal >= 0.7x)`, 'req/s', servers.map((s) => s.name), rps, {
      note: 'autocannon runs in the parent process; each server in its own process.',
    })
    cpu.print('POST /v1/passport/verify', servers.map((s) => s.name), rounds)

    // 5. Revocation propagation on real time: revoke on passport → the follower refuses it.
    const p = servers[1]!
    for (const stream of [false, true]) {
      const transport = new HttpTransport({ targets: { passport: p.url } })
      const client = createPassportClient(transport, { token: String(p.extra['adminToken']) })
      const feed = createRevocationFeed({ transport, stream })
      feed.start()
      try {
        await feed.sync()
        await new Promise((r) => setTimeout(r, 100)) // the stream connects
        const samples: number[] = []
        for (let i = 0; i < (FULL ? 40 : 12); i++) {
          const t = await client.issue({ sub: `b${i}`, aud: ['storage'], scope: ['storage:write'] })
          const t0 = performance.now()
          await client.revoke({ jti: t.jti })
          while (!feed.isRevoked(t.jti)) await new Promise((r) => setTimeout(r, 1))
          samples.push(performance.now() - t0)
          await new Promise((r) => setTimeout(r, 137)) // spread revocations over the poll phase
        }
        const s = spread(samples)
        const sorted = [...samples].sort((a, b) => a - b)
        const p99 = sorted[Math.ceil(sorted.length * 0.99) - 1]!
        console.log(`\n## Revocation propagation, real time (feed follower over HTTP, 1 s poll${stream ? ' + SSE stream' : ''}, 5 s staleness bound)`)
        console.log(`samples ${samples.length}: median ${s.median.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms (bound 5000 ms; measured from the revoke request)`)
      } finally {
        await feed.close()
        await transport.close()
      }
    }
  } finally {
    for (const s of stops.reverse()) await s.stop().catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  }
}
