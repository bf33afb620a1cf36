import { chmod, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import { CliError } from '../src/exit-codes.js'
import { ADMIN_SCOPES, ensureAdminToken, loadOrCreateIssuerKey, tokenIdOf } from '../src/keys.js'
import { KNOWN_SERVICES } from '../src/ports.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-cli-keys-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

function claimsOf(token: string): { aud: string[]; scope: string; exp: number; iat: number } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { aud: string[]; scope: string; exp: number; iat: number }
}

describe('issuer key', () => {
  it('is generated once with mode 0600 and then reused', async () => {
    const path = join(dir, 'issuer.json')
    const first = await loadOrCreateIssuerKey(path)
    expect(first.created).toBe(true)
    if (process.platform !== 'win32') expect((await stat(path)).mode & 0o777).toBe(0o600)
    const second = await loadOrCreateIssuerKey(path)
    expect(second.created).toBe(false)
    expect(second.key.kid).toBe(first.key.kid)
    expect(second.key.publicJwk.x).toBe(first.key.publicJwk.x)
  })

  it('never writes through a symlink planted at a predictable temporary name', async () => {
    const path = join(dir, 'issuer.json')
    const victim = join(dir, 'victim.txt')
    await writeFile(victim, 'precious')
    // The old temporary name was `<path>.<pid>.tmp`; an attacker could plant a symlink there.
    await symlink(victim, `${path}.${process.pid}.tmp`)
    const { created } = await loadOrCreateIssuerKey(path)
    expect(created).toBe(true)
    expect(await readFile(victim, 'utf8')).toBe('precious')
    expect(JSON.parse(await readFile(path, 'utf8'))).toBeTypeOf('object')
    // Only the key, the victim and the planted link: no temporary file is left behind.
    expect((await readdir(dir)).sort()).toEqual(['issuer.json', `issuer.json.${process.pid}.tmp`, 'victim.txt'])
  })

  it('refuses a corrupt key file instead of replacing it', async () => {
    const path = join(dir, 'issuer.json')
    await writeFile(path, '{"kty":"OKP"}')
    await expect(loadOrCreateIssuerKey(path)).rejects.toBeInstanceOf(CliError)
    expect(await readFile(path, 'utf8')).toBe('{"kty":"OKP"}')
  })
})

describe('admin token', () => {
  it('carries every scope and every service as audience, in a 0600 file', async () => {
    const { key } = await loadOrCreateIssuerKey(join(dir, 'issuer.json'))
    const path = join(dir, 'admin.token')
    const { token, minted } = await ensureAdminToken(path, key)
    expect(minted).toBe(true)
    const claims = claimsOf(token)
    expect(claims.aud).toEqual([...KNOWN_SERVICES, 'node'])
    expect(claims.scope.split(' ')).toEqual([...ADMIN_SCOPES])
    expect(claims.exp - claims.iat).toBe(30 * 24 * 3600)
    if (process.platform !== 'win32') expect((await stat(path)).mode & 0o777).toBe(0o600)
    expect((await readFile(path, 'utf8')).trim()).toBe(token)
  })

  it('is kept while valid and re-minted once expired', async () => {
    const { key } = await loadOrCreateIssuerKey(join(dir, 'issuer.json'))
    const path = join(dir, 'admin.token')
    const clock = new VirtualClock(Date.UTC(2030, 0, 1))
    const first = await ensureAdminToken(path, key, { clock, ttlSec: 86_400 })
    const again = await ensureAdminToken(path, key, { clock, ttlSec: 86_400 })
    expect(again).toEqual({ token: first.token, minted: false })
    await clock.advance(2 * 86_400_000)
    const later = await ensureAdminToken(path, key, { clock, ttlSec: 86_400 })
    expect(later.minted).toBe(true)
    expect(claimsOf(later.token).exp).toBeGreaterThan(claimsOf(first.token).exp)
    // The caller retires the token it replaced (SPEC §5), once the new one is on disk.
    expect(later.replaced).toBe(first.token)
    expect(tokenIdOf(first.token)).toEqual({ jti: (claimsOf(first.token) as { jti?: string }).jti, exp: claimsOf(first.token).exp })
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([])
  })

  it('is re-minted when signed by another key', async () => {
    const a = await loadOrCreateIssuerKey(join(dir, 'a.json'))
    const b = await loadOrCreateIssuerKey(join(dir, 'b.json'))
    const path = join(dir, 'admin.token')
    await ensureAdminToken(path, a.key)
    const res = await ensureAdminToken(path, b.key)
    expect(res.minted).toBe(true)
  })

  it.runIf(process.platform !== 'win32')('is made private (0600) when readable by others, and reported', async () => {
    const { key } = await loadOrCreateIssuerKey(join(dir, 'issuer.json'))
    const path = join(dir, 'admin.token')
    const first = await ensureAdminToken(path, key)
    await chmod(path, 0o644)
    const again = await ensureAdminToken(path, key)
    expect(again).toEqual({ token: first.token, minted: false, fixedMode: true })
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    expect((await ensureAdminToken(path, key)).fixedMode).toBeUndefined()
  })

  it('is re-minted when the file holds garbage', async () => {
    const { key } = await loadOrCreateIssuerKey(join(dir, 'issuer.json'))
    const path = join(dir, 'admin.token')
    await writeFile(path, 'not-a-token\n')
    expect((await ensureAdminToken(path, key)).minted).toBe(true)
  })
})
