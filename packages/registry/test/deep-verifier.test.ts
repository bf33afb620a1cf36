import { describe, expect, it, vi } from 'vitest'
import { Broadcast, CanceledError, noopLogger, noopMetrics, systemClock } from '@ron/core'
import { VirtualClock, until } from '@ron/core/testing'
import type { RegistryUpdated } from '../src/committer.js'
import { DeepVerifier } from '../src/deep-verifier.js'
import { payloadB3 } from '../src/descriptors.js'
import { RegistryLog } from '../src/log.js'
import { createMemoryStore } from '../src/store/index.js'
import type { LogStore } from '../src/store/types.js'
import { approve, genesisFor, payload, setOf, signers } from './helpers.js'

/** A memory store that counts reads per version and can hand back tampered bytes for one. */
function countingStore(): { store: LogStore; reads: number[]; tamper: { version: number } } {
  const inner = createMemoryStore()
  const reads: number[] = []
  const tamper = { version: 0 }
  const store: LogStore = {
    kind: inner.kind,
    open: (o) => inner.open(o),
    head: () => inner.head(),
    compareAndAppend: (expected, e, leaf) => inner.compareAndAppend(expected, e, leaf),
    async read(v) {
      reads.push(v)
      const bytes = await inner.read(v)
      if (bytes === undefined || v !== tamper.version) return bytes
      const copy = Uint8Array.from(bytes)
      copy[copy.length - 2]! ^= 1
      return copy
    },
    oldest: () => inner.oldest(),
    appendCheckpoint: (cp) => inner.appendCheckpoint(cp),
    checkpoints: () => inner.checkpoints(),
    segments: () => inner.segments(),
    sizeBytes: () => inner.sizeBytes(),
    prune: (through) => inner.prune(through),
    probe: () => inner.probe(),
    close: () => inner.close(),
  }
  return { store, reads, tamper }
}

describe('Deep Verifier read-back of commits', () => {
  it('links the next read-back to the announced entry hash only when the bytes read back match the leaf', async () => {
    const keys = signers(3)
    const { store, reads, tamper } = countingStore()
    const log = await RegistryLog.open(store, genesisFor(setOf(keys, 2)))
    const hashes: string[] = []
    for (let i = 1; i <= 4; i++) {
      const head = log.head()
      const p = payload(i)
      hashes[i] = (await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i))!.hash
    }
    const v = new DeepVerifier({ log, settings: () => ({ intervalMs: 60_000, sliceEntries: 100 }), clock: systemClock, metrics: noopMetrics, logger: noopLogger, onResult: () => undefined })
    // Announced hashes: each entry read once, every link sound.
    for (let i = 1; i <= 2; i++) expect(await v.checkCommitted(i, hashes[i])).toBe(true)
    expect(reads).toEqual([1, 2])
    // A read-back that differs from its leaf is not vouched for by the announced hash: the next
    // commit reads it again instead of linking to the announcement.
    tamper.version = 3
    expect(await v.checkCommitted(3, hashes[3])).toBe(false)
    tamper.version = 0
    reads.length = 0
    expect(await v.checkCommitted(4, hashes[4])).toBe(true)
    expect(reads).toEqual([4, 3])
    await store.close()
  })

  it('checks a read-back equal to the bytes the log holds by comparing them, and hashes one that differs', async () => {
    const keys = signers(3)
    const { store, tamper } = countingStore()
    const log = await RegistryLog.open(store, genesisFor(setOf(keys, 2)))
    const hashes: string[] = []
    for (let i = 1; i <= 3; i++) {
      const head = log.head()
      const p = payload(i)
      hashes[i] = (await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i))!.hash
    }
    const leafHash = vi.spyOn(log, 'leafHash')
    const v = new DeepVerifier({ log, settings: () => ({ intervalMs: 60_000, sliceEntries: 100 }), clock: systemClock, metrics: noopMetrics, logger: noopLogger, onResult: () => undefined })
    expect(await v.checkCommitted(1, hashes[1])).toBe(true)
    expect(leafHash).not.toHaveBeenCalled()
    // Bytes that differ from what was written fall back to the leaf hash, which refuses them.
    tamper.version = 2
    expect(await v.checkCommitted(2, hashes[2])).toBe(false)
    expect(leafHash).toHaveBeenCalledTimes(1)
    // An announced hash other than the written entry's is not vouched for by the comparison.
    tamper.version = 0
    leafHash.mockClear()
    expect(await v.checkCommitted(3, hashes[2])).toBe(true)
    expect(leafHash).toHaveBeenCalledTimes(1)
    await store.close()
  })

  it('reads each followed commit once, reads the previous entry after a gap, and still flags a bad read-back', async () => {
    const keys = signers(3)
    const { store, reads, tamper } = countingStore()
    const log = await RegistryLog.open(store, genesisFor(setOf(keys, 2)))
    for (let i = 1; i <= 6; i++) {
      const head = log.head()
      const p = payload(i)
      await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i)
    }
    const failures: string[][] = []
    const v = new DeepVerifier({
      log,
      settings: () => ({ intervalMs: 60_000, sliceEntries: 100 }),
      clock: systemClock,
      metrics: noopMetrics,
      logger: noopLogger,
      onResult: (ok, problems) => {
        if (!ok) failures.push(problems)
      },
    })
    for (let i = 1; i <= 4; i++) expect(await v.checkCommitted(i)).toBe(true)
    // In order: each entry read once (version 1 links the genesis; later ones the remembered hash).
    expect(reads).toEqual([1, 2, 3, 4])
    reads.length = 0
    expect(await v.checkCommitted(6)).toBe(true)
    // After a gap the previous entry is read from the medium.
    expect(reads).toEqual([6, 5])
    reads.length = 0
    tamper.version = 5
    expect(await v.checkCommitted(5)).toBe(false)
    expect(failures).toHaveLength(1)
    expect(failures[0]!.join(' ')).toMatch(/version 5: read-back differs from the leaf hash/)
    // A failed check is not remembered as a sound predecessor: version 6 reads 5 again (and its
    // tampered bytes no longer link).
    tamper.version = 0
    reads.length = 0
    expect(await v.checkCommitted(6)).toBe(true)
    expect(reads).toEqual([6, 5])
    await store.close()
  })
})

describe('Deep Verifier full pass', () => {
  it('checks entries the log holds by comparing bytes, hashes the others, and flags a tampered one either way', async () => {
    const keys = signers(3)
    const { store, tamper } = countingStore()
    // Two recent entries held in memory; the older ones only on the medium.
    const log = await RegistryLog.open(store, genesisFor(setOf(keys, 2)), { cacheSize: 2 })
    for (let i = 1; i <= 5; i++) {
      const head = log.head()
      const p = payload(i)
      await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i)
    }
    const leafHash = vi.spyOn(log, 'leafHash')
    const v = new DeepVerifier({ log, settings: () => ({ intervalMs: 60_000, sliceEntries: 100 }), clock: systemClock, metrics: noopMetrics, logger: noopLogger, onResult: () => undefined })
    expect(await v.verifyNow()).toMatchObject({ ok: true, entries: 5 })
    // Versions 1–3 hashed; 4 and 5 compared with the bytes held.
    expect(leafHash).toHaveBeenCalledTimes(3)
    for (const version of [2, 5]) {
      tamper.version = version
      const r = await v.verifyNow()
      expect(r.ok).toBe(false)
      expect(r.problems.join('\n')).toMatch(new RegExp(`version ${version}: bytes do not match the leaf hash`))
    }
    await store.close()
  })
})

describe('Deep Verifier task', () => {
  it('reads back each published commit, and ends with the signal\'s reason when aborted', async () => {
    const keys = signers(3)
    const { store, reads } = countingStore()
    const log = await RegistryLog.open(store, genesisFor(setOf(keys, 2)))
    const committed = new Broadcast<RegistryUpdated>({ name: 'test', capacity: 16 })
    const v = new DeepVerifier({ log, committed, settings: () => ({ intervalMs: 60_000, sliceEntries: 100 }), clock: new VirtualClock(), metrics: noopMetrics, logger: noopLogger, onResult: () => undefined })
    const ac = new AbortController()
    const running = v.run(ac.signal)
    for (let i = 1; i <= 3; i++) {
      const head = log.head()
      const p = payload(i)
      const enc = (await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i))!
      committed.publish({ type: 'RegistryUpdated', version: i, b3: enc.entry.payloadB3, hash: enc.hash, committedAt: i })
      await until(() => reads.includes(i), `read-back of version ${i}`)
    }
    expect(reads).toEqual([1, 2, 3])
    expect(committed.subscribers).toBe(1)
    ac.abort()
    await expect(running).rejects.toBeInstanceOf(CanceledError)
    // The subscription is gone with the task.
    expect(committed.subscribers).toBe(0)
    await store.close()
  })
})
