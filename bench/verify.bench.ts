/**
 * Token verification ops/s: our verifier against jose's `jwtVerify` on the same token with a
 * pre-imported key, and a bare node:crypto Ed25519 verify of the same bytes (the floor: what the
 * signature alone costs).
 */
import { verify as cryptoVerify } from 'node:crypto'
import { importJWK, jwtVerify } from 'jose'
import { createTokenVerifier, generateIssuerKey, RevocationSet, signToken, staticKeySource } from '../packages/core/src/auth/index.js'
import { compare, report } from './harness.js'

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
  const verifier = createTokenVerifier({ keys: staticKeySource([key]), revocations })
  const required = { audience: 'storage', scope: 'storage:write' }
  const joseKey = await importJWK(key.publicJwk, 'EdDSA')
  const dot = token.lastIndexOf('.')
  const data = Buffer.from(token.slice(0, dot))
  const sig = Buffer.from(token.slice(dot + 1), 'base64url')

  await verifier.verify(token, required) // sanity: must pass
  const rows = await compare(
    { name: 'node:crypto verify only (floor)', fn: () => cryptoVerify(null, data, key.publicKey, sig) },
    [
      { name: 'ron createTokenVerifier().verify', fn: () => verifier.verify(token, required) },
      { name: 'jose jwtVerify (EdDSA, aud check)', fn: () => jwtVerify(token, joseKey, { audience: 'storage', algorithms: ['EdDSA'] }) },
    ],
    { ops: 3000, rounds: 7 },
  )
  report('Token verify (Ed25519 JWS)', rows)
  const ron = rows[1]!.opsPerSec
  const jose = rows[2]!.opsPerSec
  console.log(`ron / jose = ${(ron / jose).toFixed(2)}x`)
}
