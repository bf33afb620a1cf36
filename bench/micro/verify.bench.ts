/**
 * Token verification ops/s: our verifier against jose's `jwtVerify` on the same token with a
 * pre-imported key, and a bare node:crypto Ed25519 verify of the same bytes (the floor: what the
 * signature alone costs). Two cases: first verification (the verifier's token cache off, so every
 * call parses and checks the signature) and repeated verification of the same token (cache on,
 * what a service sees for a client reusing its bearer token); jose has no cache in both.
 */
import { verify as cryptoVerify } from 'node:crypto'
import { importJWK, jwtVerify } from 'jose'
import { createTokenVerifier, generateIssuerKey, RevocationSet, signToken, staticKeySource } from '../../packages/core/src/auth/index.js'
import { compare, report } from '../lib/harness.js'

export async function run(): Promise<void> {
  const key = generateIssuerKey()
  const token = signToken(key, {
    sub: 'bench',
    aud: ['storage', 'registry'],
    scope: 'storage:write storage:read',
    ttlSec: 3600,
    ron: { maxBytes: 1 << 20, pathPrefix: '/o' },
  })
  const revocations = new RevocationSet()
  for (let i = 0; i < 1000; i++) revocations.add(`revoked-${i}`, Math.floor(Date.now() / 1000) + 3600)
  const verifier = createTokenVerifier({ keys: staticKeySource([key]), revocations, cache: false })
  const cached = createTokenVerifier({ keys: staticKeySource([key]), revocations })
  const required = { audience: 'storage', scope: 'storage:write' }
  const joseKey = await importJWK(key.publicJwk, 'EdDSA')
  const dot = token.lastIndexOf('.')
  const data = Buffer.from(token.slice(0, dot))
  const sig = Buffer.from(token.slice(dot + 1), 'base64url')

  await verifier.verify(token, required) // sanity: must pass
  await cached.verify(token, required) // and warms the cache
  const floor = { name: 'node:crypto verify only (floor)', fn: () => cryptoVerify(null, data, key.publicKey, sig) }
  const jose = { name: 'jose jwtVerify (EdDSA, aud check)', fn: () => jwtVerify(token, joseKey, { audience: 'storage', algorithms: ['EdDSA'] }) }
  const first = await compare(floor, [{ name: 'ron verify, first verification (cache: false)', fn: () => verifier.verify(token, required) }, jose], { ops: 3000, rounds: 7 })
  report('Token verify, first verification (Ed25519 JWS)', first)
  console.log(`ron / jose = ${(first[1]!.opsPerSec / first[2]!.opsPerSec).toFixed(2)}x`)
  const repeated = await compare(floor, [{ name: 'ron verify, repeated verification (cached)', fn: () => cached.verify(token, required) }, jose], { ops: 3000, rounds: 7 })
  report('Token verify, repeated verification of one token (Ed25519 JWS)', repeated)
  console.log(`ron (cached) / jose = ${(repeated[1]!.opsPerSec / repeated[2]!.opsPerSec).toFixed(2)}x`)
}
