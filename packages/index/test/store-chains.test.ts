/**
 * The LMDB name store decides a write's compare-and-set on the main thread and hands lmdb a batch
 * (issue 24, item 2): writes of one name are chained, each deciding once the one before it has
 * committed or failed. These tests hold or fail the batches (a proxy on `lmdb`'s `batch`) to
 * check what that must keep: one history per name with strictly increasing `seq` under every
 * explored order, nothing decided on a write whose commit then failed, and the janitor's purge
 * and the start's migration meeting pending writes. The last test kills a writing process and
 * reopens its directory: every acknowledged write is there.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ConflictError, NotFoundError, isRonError } from '@ron/core'
import type { Address } from '@ron/core'
import { deferred, exploreSchedules } from '@ron/core/testing'
import { openLmdbNameStore } from '../src/index.js'
import type { NameRecord, NameState, NameStore, SignedNameRecord } from '../src/index.js'
import { addr, manifestFor } from './helpers.js'

type Batch = (apply: () => void) => Promise<unknown>

/** While set, every `batch` of the next databases goes through it (with the real one); `transactions` counts transactions begun. */
const hooks: { batch: ((real: Batch, apply: () => void) => Promise<unknown>) | undefined; transactions: number } = { batch: undefined, transactions: 0 }

vi.mock('lmdb', async (importOriginal) => {
  const real = await importOriginal<typeof import('lmdb')>()
  const { proxiedOpen } = await import('./fixtures/lmdb-proxy.js')
  const open = proxiedOpen(real, (target, prop) => {
    if (prop === 'batch' && hooks.batch !== undefined) {
      const hook = hooks.batch
      return (apply: () => void) => hook((a) => target.batch(a), apply)
    }
    if (prop === 'transaction') hooks.transactions++
    return undefined
  })
  return { ...real, open }
})

const dirs: string[] = []
afterEach(async () => {
  hooks.batch = undefined
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ron-index-chain-'))
  dirs.push(d)
  return d
}

/** A record as the service signs it (stores do not verify records). */
const record = (name: string, manifestAddress: Address | null, seq: number, signedAt = 1): SignedNameRecord => ({
  name,
  manifestAddress,
  seq,
  node: 'n0000000000000001',
  signedAt,
  sig: 'x'.repeat(86),
})

/** The service's rule (`routes/writes.ts`): one more than anything signed for the name so far. */
const nextSeq = (st: NameState): number => Math.max(st.binding === undefined ? 0 : (st.binding.record?.seq ?? 1), st.tombstone?.seq ?? 0) + 1

const binding = (name: string, a: Address, seq: number): NameRecord => ({ manifestAddress: a, manifest: manifestFor(a), updatedAt: 1, record: record(name, a, seq) })

/** A failed commit as lmdb reports it: the cause arrives through `commitError`. */
const commitFailed = (): Error => Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: Promise.reject(Object.assign(new Error('Input/output error'), { code: 5 })) })

/** What one decided write saw and did. */
interface Decided {
  op: number
  saw: Address | null
  seq: number
  bound: Address | null
}

describe('LMDB name store: writes of one name are chained', () => {
  it('concurrent puts and deletes of one name, in every explored order of arrival and commit: one history, seq strictly increasing', async () => {
    const base = await tmp()
    let run = 0
    const name = 'one.chain'
    // Each op: a put (`to`) or a delete (`to: null`) with what it expects.
    const ops: Array<{ to: Address | null; expected: Address | null | undefined }> = [
      { to: addr(0), expected: null },
      { to: addr(1), expected: addr(0) },
      { to: addr(2), expected: undefined },
      { to: null, expected: addr(2) },
      { to: addr(4), expected: null },
      { to: addr(5), expected: addr(1) },
      { to: null, expected: undefined },
    ]
    await exploreSchedules(25, async (s) => {
      const store = await openLmdbNameStore({ dir: join(base, `db${run++}`) })
      // lmdb's commits reach the store in an order the scheduler picks.
      hooks.batch = (real, apply) => s.schedule(real(apply), 'commit')
      const decided: Decided[] = []
      try {
        const writes = ops.map((op, i) =>
          s.schedule(Promise.resolve(), `arrive ${i}`).then(() => {
            if (op.to !== null) {
              const to = op.to
              return store.put(name, op.expected, (st) => {
                const seq = nextSeq(st)
                decided.push({ op: i, saw: st.binding?.manifestAddress ?? null, seq, bound: to })
                return binding(name, to, seq)
              })
            }
            return store.delete(name, op.expected ?? undefined, (b, t) => {
              const seq = nextSeq({ binding: b, tombstone: t })
              decided.push({ op: i, saw: b.manifestAddress, seq, bound: null })
              return record(name, null, seq)
            })
          }),
        )
        const results = await s.waitFor(Promise.allSettled(writes))
        // Each decided write saw exactly what the one decided before it left, with the next seq.
        let cur: Address | null = null
        let seq = 0
        for (const d of decided) {
          expect(d.saw).toBe(cur)
          expect(d.seq).toBe(seq + 1)
          cur = d.bound
          seq = d.seq
        }
        // Every write was either decided (and answered what it saw) or refused by the rule.
        results.forEach((r, i) => {
          const d = decided.find((x) => x.op === i)
          if (r.status === 'fulfilled') expect(r.value.previous).toBe(d?.saw)
          else {
            expect(d).toBeUndefined()
            expect(r.reason instanceof ConflictError || r.reason instanceof NotFoundError).toBe(true)
          }
        })
        expect(store.get(name)?.manifestAddress ?? null).toBe(cur)
        expect(store.get(name)?.record?.seq ?? store.tombstone(name)?.seq ?? 0).toBe(seq)
      } finally {
        hooks.batch = undefined
        await store.close()
      }
    })
  })

  it('a failed commit in the middle of a chain: the write after it decides on the state before it, and seq is not skipped', async () => {
    const store = await openLmdbNameStore({ dir: await tmp() })
    try {
      const name = 'mid.chain'
      let batches = 0
      // The second batch fails as a failing disk makes lmdb fail a commit.
      hooks.batch = (real, apply) => (++batches === 2 ? Promise.reject(commitFailed()) : real(apply))
      const seen: Array<{ i: number; st: Address | null; seq: number }> = []
      const put = (i: number, expected: Address | null | undefined) =>
        store.put(name, expected, (st) => {
          const seq = nextSeq(st)
          seen.push({ i, st: st.binding?.manifestAddress ?? null, seq })
          return binding(name, addr(i), seq)
        })
      const [a, b, c, d] = await Promise.allSettled([put(1, null), put(2, addr(1)), put(3, addr(1)), put(4, addr(2))])
      expect(a).toEqual({ status: 'fulfilled', value: { previous: null } })
      // The failed write: a disk fault, nothing of it stored.
      expect(b.status).toBe('rejected')
      expect(isRonError((b as PromiseRejectedResult).reason, 'NotReady')).toBe(true)
      // The next write of the name decided after the failure, on the first write's binding.
      expect(c).toEqual({ status: 'fulfilled', value: { previous: addr(1) } })
      // Expecting the failed write's binding is a conflict: it never was.
      expect(d.status).toBe('rejected')
      expect((d as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError)
      expect(seen).toEqual([
        { i: 1, st: null, seq: 1 },
        { i: 2, st: addr(1), seq: 2 },
        { i: 3, st: addr(1), seq: 2 },
      ])
      expect(store.get(name)).toMatchObject({ manifestAddress: addr(3), record: { seq: 2 } })
    } finally {
      await store.close()
    }
  })

  it('a purge while writes are decided but not yet committed: the put ends the tombstone, a delete keeps its fresh one, seq goes on', async () => {
    const store = await openLmdbNameStore({ dir: await tmp() })
    try {
      // An old tombstone (seq 5) and a binding (seq 3).
      await store.put('was.gone', undefined, () => binding('was.gone', addr(9), 4))
      await store.delete('was.gone', addr(9), () => record('was.gone', null, 5, 10))
      await store.put('to.go', null, () => binding('to.go', addr(7), 3))
      // Hold the next two batches: decided, not yet handed to lmdb.
      const gate = deferred()
      let held = 0
      hooks.batch = (real, apply) => {
        held++
        return gate.promise.then(() => real(apply))
      }
      const put = store.put('was.gone', undefined, (st) => binding('was.gone', addr(10), nextSeq(st)))
      const del = store.delete('to.go', addr(7), (b, t) => record('to.go', null, nextSeq({ binding: b, tombstone: t }), 1_000_000))
      await vi.waitFor(() => expect(held).toBe(2))
      // The purge runs (and commits) meanwhile: it removes the old tombstone, and knows nothing of
      // the delete's, which is not committed.
      hooks.batch = undefined
      expect(await store.purgeTombstones(2_000_000)).toBe(1)
      gate.resolve()
      await expect(put).resolves.toEqual({ previous: null })
      await expect(del).resolves.toEqual({ previous: addr(7) })
      expect(store.get('was.gone')).toMatchObject({ manifestAddress: addr(10), record: { seq: 6 } })
      expect(store.tombstone('was.gone')).toBeUndefined()
      expect(store.tombstone('to.go')).toMatchObject({ seq: 4 })
      // Later writes count on from what the pending ones signed.
      await store.put('to.go', null, (st) => binding('to.go', addr(8), nextSeq(st)))
      expect(store.get('to.go')?.record?.seq).toBe(5)
      expect(store.tombstone('to.go')).toBeUndefined()
    } finally {
      await store.close()
    }
  })

  it('migrate waits for the writes in flight, and a write arriving during it decides on what it rewrote', async () => {
    const store: NameStore = await openLmdbNameStore({ dir: await tmp() })
    try {
      await store.put('old.a', null, () => ({ manifestAddress: addr(1), manifest: manifestFor(addr(1)), updatedAt: 1 }))
      const gate = deferred()
      let held = 0
      hooks.batch = (real, apply) => {
        held++
        return gate.promise.then(() => real(apply))
      }
      // Decided (an unsigned binding), held before lmdb.
      const pending = store.put('old.b', null, () => ({ manifestAddress: addr(2), manifest: manifestFor(addr(2)), updatedAt: 1 }))
      await vi.waitFor(() => expect(held).toBe(1))
      let during: Promise<unknown> | undefined
      const fixed: string[] = []
      const before = hooks.transactions
      const migrated = store.migrate({
        binding: (n, b) => {
          // A write of a name the migration is rewriting, arriving in the middle of it.
          during ??= store.put('old.a', undefined, (st) => binding('old.a', addr(3), nextSeq(st)))
          fixed.push(n)
          return b.record === undefined ? binding(n, b.manifestAddress, 1) : undefined
        },
        tombstone: () => undefined,
      })
      await new Promise((r) => setImmediate(r))
      // Waiting for the held write: the rewrite has not even begun its transaction.
      expect(hooks.transactions).toBe(before)
      hooks.batch = undefined
      gate.resolve()
      await expect(pending).resolves.toEqual({ previous: null })
      // The migration saw the write it waited for.
      await expect(migrated).resolves.toBe(2)
      expect(fixed).toEqual(['old.a', 'old.b'])
      // The write that came during it decided on the migrated record (seq 1), so signs seq 2.
      await expect(during).resolves.toEqual({ previous: addr(1) })
      expect(store.get('old.a')?.record?.seq).toBe(2)
      expect(store.get('old.b')?.record?.seq).toBe(1)
    } finally {
      await store.close()
    }
  })
})

describe('LMDB name store: a crash loses nothing acknowledged', () => {
  it('a process writing 16 at a time is killed (SIGKILL); on reopen every acknowledged write is there', async () => {
    const dir = await tmp()
    const fixture = fileURLToPath(new URL('./fixtures/name-writer.ts', import.meta.url))
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, dir, '20000'], { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const exited = new Promise<void>((r) => child.once('exit', () => r()))
    /** The highest seq acknowledged per name, and how many acknowledgements came. */
    const acked = new Map<string, number>()
    let acks = 0
    const enough = deferred()
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      const lines = out.split('\n')
      out = lines.pop() ?? ''
      for (const l of lines) {
        const [n, v] = l.split(' ')
        if (n === undefined || v === undefined) continue
        acks++
        acked.set(n, Math.max(acked.get(n) ?? 0, Number(v)))
      }
      if (acks >= 400) enough.resolve()
    })
    void exited.then(() => enough.reject(new Error(`writer exited early: ${stderr}`)))
    try {
      await enough.promise
    } finally {
      child.kill('SIGKILL')
      await exited
    }
    expect(acks).toBeGreaterThanOrEqual(400)
    expect(acked.size).toBe(100)
    const store = await openLmdbNameStore({ dir: join(dir, 'db') })
    try {
      for (const [n, v] of acked) {
        // Acknowledged: there, with what it acknowledged or a later write of the name.
        const seq = store.get(n)?.record?.seq
        expect(seq, n).toBeGreaterThanOrEqual(v)
      }
    } finally {
      await store.close()
    }
  })
})
