import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ALL_SCOPES, MemoryTransport, generateIssuerKey } from '@ron/core'
import { VirtualClock, mountTmpfs } from '@ron/core/testing'
import { createPassportClient, createPassportService, type PassportService } from '../src/index.js'
import { fsFault } from './fs-faults.js'
import { ADMIN_POLICY, T0, rejection, until } from './helpers.js'

vi.mock('node:fs/promises', async (orig) => (await import('./fs-faults.js')).injectableFs(await orig()))

/** A volume that fills up and turns read-only: a real tmpfs when this process can mount one, injected faults otherwise. */
interface Volume {
  path: string
  real: boolean
  fill(): Promise<void>
  unfill(): Promise<void>
  setReadOnly(ro: boolean): Promise<void>
  close(): Promise<void>
}

async function volume(): Promise<Volume> {
  // RON_TEST_INJECT_FAULTS=1 runs the injected variant even where a tmpfs could be mounted.
  const fs = process.env['RON_TEST_INJECT_FAULTS'] === '1' ? undefined : await mountTmpfs(1024 * 1024)
  if (fs !== undefined) return { ...fs, real: true, path: fs.path, close: () => fs.close() }
  const path = await mkdtemp(join(tmpdir(), 'ron-passport-faults-'))
  const set = (code: typeof fsFault.code): Promise<void> => {
    fsFault.under = path
    fsFault.code = code
    return Promise.resolve()
  }
  return {
    path,
    real: false,
    fill: () => set('ENOSPC'),
    unfill: () => set(undefined),
    setReadOnly: (ro) => set(ro ? 'EROFS' : undefined),
    close: async () => {
      await set(undefined)
      await rm(path, { recursive: true, force: true })
    },
  }
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A passport on `dir`, restartable on the same clock. */
async function open(dir: string, clock: VirtualClock) {
  const transport = new MemoryTransport({ clock })
  const passport = await createPassportService({ clock, drainReadWindowMs: 0, dataDir: dir, policy: ADMIN_POLICY }, transport)
  transport.mount('passport', passport)
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await passport.close()
    await transport.close()
  }
  cleanups.push(close)
  return { passport, transport, close }
}

function expectDiskFault(e: { status: number; code: string; details: Record<string, unknown> }, reason: string): void {
  expect([e.status, e.code, e.details['reason']]).toEqual([503, 'NotReady', reason])
}

function expectWriteUnready(p: PassportService, reason: string): void {
  const h = p.health()
  expect(h.ready).toBe(true) // verification keeps working
  expect(h.writeReady).toBe(false)
  expect(h.paths).toMatchObject({ revoke: false, issue: false, verify: true })
  expect(h.missing).toContain('disk')
  expect(h.reason).toContain(`disk: ${reason}`)
}

describe('a revocation is acknowledged only once it is on disk (issue 20, item 3)', () => {
  it('on a full volume revoke answers 503 disk_full and applies nothing, a retry too; once space returns it lands and survives a restart', async () => {
    const vol = await volume()
    cleanups.push(() => vol.close())
    const clock = new VirtualClock(T0)
    const dir = join(vol.path, 'passport')
    const p = await open(dir, clock)
    const admin = await p.passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
    const client = createPassportClient(p.transport, { token: admin.token })
    const victim = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    // A subtree large enough that its revocation needs fresh blocks of the full volume.
    const children = []
    for (let i = 0; i < 60; i++) children.push(await client.attenuate({ token: victim.token, ttlSec: 300 }))
    await vol.fill()
    for (let attempt = 0; attempt < 2; attempt++) {
      expectDiskFault(await rejection(client.revoke({ jti: victim.jti })), 'disk_full')
      // Not applied in memory either: passport's verifier, the feed and its stream say nothing happened.
      expect(await client.verify(victim.token)).toMatchObject({ valid: true })
      expect(await client.verify(children[59]!.token)).toMatchObject({ valid: true })
      expect((await client.revocations(0)).items).toEqual([])
      expectWriteUnready(p.passport, 'disk_full')
    }
    await vol.unfill()
    const r = await client.revoke({ jti: victim.jti })
    expect(r.revoked).toHaveLength(61)
    expect(p.passport.health().writeReady).toBe(true)
    // The file holds whole lines only: the failed appends were cut off again.
    const lines = (await readFile(join(dir, 'revocations.jsonl'), 'utf8')).split('\n').filter((l) => l !== '')
    expect(lines.map((l) => JSON.parse(l) as unknown)).toHaveLength(62)
    await p.close()
    const again = await open(dir, clock)
    const c2 = createPassportClient(again.transport, { token: admin.token })
    expect(await c2.verify(victim.token)).toEqual({ valid: false, reason: 'revoked' })
    expect(await c2.verify(children[0]!.token)).toEqual({ valid: false, reason: 'revoked' })
  })

  it('on a read-only volume every write path answers 503 read_only, hands out nothing, never exits; the probe turns it ready again', async () => {
    const vol = await volume()
    cleanups.push(() => vol.close())
    const clock = new VirtualClock(T0)
    const dir = join(vol.path, 'passport')
    const p = await open(dir, clock)
    const admin = await p.passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
    const client = createPassportClient(p.transport, { token: admin.token })
    const held = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    const kid = p.passport.keySummary().current.kid
    await vol.setReadOnly(true)
    // Issue and attenuate: the parent link cannot be made durable, so no token is handed out.
    expectDiskFault(await rejection(client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })), 'read_only')
    expectDiskFault(await rejection(client.attenuate({ token: held.token, ttlSec: 60 })), 'read_only')
    expectDiskFault(await rejection(client.revoke({ jti: held.jti })), 'read_only')
    expectDiskFault(await rejection(client.rotate()), 'read_only')
    expect(p.passport.keySummary().current.kid).toBe(kid)
    const nodeKey = generateIssuerKey()
    expectDiskFault(await rejection(client.enrolNode({ nodeId: 'n0123456789abcdef', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: nodeKey.publicJwk.x }, scopes: ['storage:replicate'] })), 'read_only')
    expectWriteUnready(p.passport, 'read_only')
    expect(p.passport.health().live).toBe(true)
    // Reads and verification carry on.
    expect(await client.verify(held.token)).toMatchObject({ valid: true })
    await vol.setReadOnly(false)
    // No write needed: the probe notices.
    await clock.advance(1000)
    await until(() => p.passport.health().writeReady, 'the probe to see the disk writable')
    expect(p.passport.health().paths).toMatchObject({ revoke: true, issue: true })
    await expect(client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).resolves.toBeDefined()
    await expect(client.rotate()).resolves.toBeDefined()
  })
})

describe('parent links are durable; a revocation being written blocks minting from its subtree', () => {
  it('after a restart, revoking a token still revokes what was minted from it before', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-passport-tree-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    const clock = new VirtualClock(T0)
    const p = await open(dir, clock)
    const admin = await p.passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
    const client = createPassportClient(p.transport, { token: admin.token })
    const parent = await client.issue({ sub: 'admin', aud: ['storage', 'passport'], scope: ['storage:write', 'passport:issue'], ttlSec: 600 })
    const child = await client.attenuate({ token: parent.token, ttlSec: 300 })
    const issued = await createPassportClient(p.transport, { token: parent.token }).issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 300 })
    const grandchild = await client.attenuate({ token: issued.token, ttlSec: 60 })
    await p.close()
    const again = await open(dir, clock)
    const c2 = createPassportClient(again.transport, { token: admin.token })
    const r = await c2.revoke({ jti: parent.jti })
    expect(new Set(r.revoked)).toEqual(new Set([parent.jti, child.jti, issued.jti, grandchild.jti]))
    for (const t of [child, issued, grandchild]) expect(await c2.verify(t.token)).toEqual({ valid: false, reason: 'revoked' })
  })

  it('while a revocation is being made durable its tokens still verify, and a mint from its subtree is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-passport-race-'))
    cleanups.push(() => {
      Object.assign(fsFault, { under: undefined, gate: undefined })
      return rm(dir, { recursive: true, force: true })
    })
    const clock = new VirtualClock(T0)
    const p = await open(dir, clock)
    const admin = await p.passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
    const client = createPassportClient(p.transport, { token: admin.token })
    const parent = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    const child = await client.attenuate({ token: parent.token, ttlSec: 300 })
    let open_!: () => void
    Object.assign(fsFault, { under: dir, gate: new Promise<void>((r) => (open_ = r)), held: 0 })
    const revoking = client.revoke({ jti: parent.jti })
    await until(() => fsFault.held === 1, 'the revocation waits for its fdatasync')
    // Not acknowledged, so not applied: the tokens verify...
    expect(await client.verify(child.token)).toMatchObject({ valid: true })
    // ...but nothing more is minted from the subtree being revoked.
    for (const from of [parent, child]) {
      const e = await rejection(client.attenuate({ token: from.token, ttlSec: 30 }))
      expect([e.status, e.details['reason']]).toEqual([401, 'revoked'])
    }
    fsFault.gate = undefined
    open_()
    expect((await revoking).revoked).toHaveLength(2)
    expect(await client.verify(child.token)).toEqual({ valid: false, reason: 'revoked' })
  })
})
