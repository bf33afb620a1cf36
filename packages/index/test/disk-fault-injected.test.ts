/**
 * Disk faults injected under LMDB (issue 20, item 3): the failures a real volume cannot be made to
 * produce on demand here — a read-only volume (remounting one that LMDB holds open is refused), an
 * I/O error with space left — shaped as `lmdb` reports them (`Error('Commit failed')` whose
 * `commitError` rejects with LMDB's numeric errno). Each is a 503 `NotReady` with its reason; reads
 * go on; writes come back once the fault clears. Also: records of names stored before records were
 * signed are signed at start, and a disk that refuses that write does not stop the start.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MemoryTransport } from '@ron/core'
import { VirtualClock, createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService, openLmdbNameStore, verifyNameRecord } from '../src/index.js'
import type { IndexService, NameResolution } from '../src/index.js'
import { FakeStorage, directory, manifestFor, testNode } from './helpers.js'

/** The failure the next LMDB transactions and batches reject with, while set; `refused` counts them. */
const hooks: { fail: (() => Error) | undefined; refused: number } = { fail: undefined, refused: 0 }

vi.mock('lmdb', async (importOriginal) => {
  const real = await importOriginal<typeof import('lmdb')>()
  const { proxiedOpen } = await import('./fixtures/lmdb-proxy.js')
  const open = proxiedOpen(real, (_target, prop) => {
    // Name writes commit as batches, the janitor's purge and the probe as transactions.
    if ((prop === 'transaction' || prop === 'batch') && hooks.fail !== undefined) {
      const fail = hooks.fail
      return () => {
        hooks.refused++
        return Promise.reject(fail())
      }
    }
    return undefined
  })
  return { ...real, open }
})

/** A failed commit as lmdb reports it: the cause arrives through `commitError`. */
function commitFailed(errno: number, message: string): () => Error {
  return () => Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: Promise.reject(Object.assign(new Error(message), { code: errno })) })
}

const dirs: string[] = []
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  hooks.fail = undefined
  for (const c of closers.splice(0).reverse()) await c()
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ron-index-fault-'))
  dirs.push(d)
  return d
}

async function durableIndex(dir: string, extra: Parameters<typeof createIndexService>[0] = {}) {
  const clock = new VirtualClock(3_000_000)
  const transport = new MemoryTransport({ clock })
  closers.push(() => transport.close())
  const storage = new FakeStorage()
  transport.mount('storage', storage)
  const issuer = createTestIssuer({ clock })
  const index = await createIndexService({ dataDir: dir, clock, storeProbeMs: 500, auth: { keys: issuer.keys }, ...extra }, transport)
  closers.push(() => index.close())
  transport.mount('index', index)
  const client = createIndexClient(transport, { token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
  return { clock, transport, storage, index, client, anon: createIndexClient(transport) }
}

/**
 * Moves virtual time on by probe periods and waits for what the (real) disk probe decides.
 * The probe does real I/O (statfs, then the commit), so it ends at a time of the machine's
 * choosing, not the test's: a probe started while the fault stood can fail after the test cleared
 * it, and then schedules its next attempt one period after the virtual now. So: a failing probe is
 * awaited until the disk actually refused it (not merely until `writeReady` is still false, which
 * it was before); a passing one is driven period by period until the disk takes the write.
 */
async function probe(clock: VirtualClock, index: IndexService, writeReady: boolean): Promise<void> {
  if (!writeReady) {
    const refused = hooks.refused
    await vi.waitFor(
      async () => {
        if (hooks.refused === refused) await clock.advance(500)
        expect(hooks.refused).toBeGreaterThan(refused)
      },
      { timeout: 10_000, interval: 5 },
    )
    expect(index.health().writeReady).toBe(false)
    return
  }
  await vi.waitFor(
    async () => {
      await clock.advance(500)
      expect(index.health().writeReady).toBe(true)
    },
    { timeout: 10_000, interval: 5 },
  )
}

describe('injected disk faults under LMDB', () => {
  for (const [reason, errno, message] of [
    ['read_only', 30, 'Read-only file system'],
    ['io_error', 5, 'Input/output error'],
    ['disk_full', 28, 'No space left on device'],
  ] as const) {
    it(`${message} (errno ${errno}) → 503 NotReady ${reason}; reads go on; writes come back when it clears`, async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (e: unknown): void => void unhandled.push(e)
      process.on('unhandledRejection', onUnhandled)
      closers.push(() => Promise.resolve(void process.off('unhandledRejection', onUnhandled)))
      const s = await durableIndex(await tmp())
      const a = s.storage.put(JSON.stringify(manifestFor('a')))
      await s.client.setName('kept.name', a)

      hooks.fail = commitFailed(errno, message)
      await expect(s.client.setName('new.name', a)).rejects.toMatchObject({ code: 'NotReady', status: 503, details: { reason } })
      await expect(s.client.deleteName('kept.name')).rejects.toMatchObject({ code: 'NotReady', details: { reason } })
      expect(s.index.health()).toMatchObject({ ready: true, writeReady: false, paths: { names: false, resolve: true } })
      expect(s.index.health().missing).toContain('disk')
      await expect(s.anon.resolve('kept.name', { fresh: true })).resolves.toMatchObject({ manifestAddress: a })
      // Still failing: the probe keeps writes unready.
      await probe(s.clock, s.index, false)

      hooks.fail = undefined
      await probe(s.clock, s.index, true)
      await expect(s.client.setName('new.name', a)).resolves.toMatchObject({ seq: 1 })
      await expect(s.anon.resolve('new.name')).resolves.toMatchObject({ manifestAddress: a })
      expect(unhandled).toEqual([])
    })
  }

  it('names stored before records were signed are homed at start and signed when served, byte for byte as before', async () => {
    const dir = await tmp()
    const storeOld = await openLmdbNameStore({ dir })
    const m = manifestFor('old')
    const { addressOf } = await import('@ron/core')
    const ma = addressOf(new TextEncoder().encode(JSON.stringify(m)))
    // The old layout: a binding without a record.
    await storeOld.put('old.name', undefined, () => ({ manifestAddress: ma, manifest: m, manifestText: JSON.stringify(m), updatedAt: 1_234 }))
    await storeOld.close()

    const me = testNode()
    // The disk refuses the signing write at start: the index starts anyway, writes unready.
    hooks.fail = commitFailed(5, 'Input/output error')
    const s = await durableIndex(dir, { identity: me.identity, nodes: directory(me) })
    expect(s.index.health()).toMatchObject({ ready: true, writeReady: false })
    const served = ((await s.anon.resolve('old.name')) as NameResolution).record
    expect(verifyNameRecord(served, 'old.name', directory(me))).toMatchObject({ ok: true, record: { seq: 1, node: me.identity.id, signedAt: 1_234, manifestAddress: ma } })
    expect((await s.anon.listNames()).names).toEqual([served])

    hooks.fail = undefined
    await probe(s.clock, s.index, true)
    await s.index.close()
    const reopened = await openLmdbNameStore({ dir })
    try {
      // The start kept the record's fields; the signature is made when it is served.
      const { sig, ...fields } = served!
      expect(sig).toMatch(/^[A-Za-z0-9_-]{86}$/)
      expect(reopened.get('old.name')?.record).toEqual(fields)
    } finally {
      await reopened.close()
    }
  })
})
