import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { JsonlFile } from '../src/jsonl-file.js'
import { fsFault } from './fs-faults.js'

vi.mock('node:fs/promises', async (orig) => (await import('./fs-faults.js')).injectableFs(await orig()))

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-jsonl-'))
  Object.assign(fsFault, { under: dir, code: undefined, partial: false, counts: {} })
})
afterEach(async () => {
  Object.assign(fsFault, { under: undefined, code: undefined, partial: false, counts: {} })
  await rm(dir, { recursive: true, force: true })
})

const lines = async (path: string): Promise<unknown[]> => (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as unknown)

describe('JsonlFile: durable appends', () => {
  it('a write cut short by a full disk is truncated away: the file keeps whole lines and the next append is clean', async () => {
    const path = join(dir, 'log.jsonl')
    const seen: unknown[] = []
    const { file } = await JsonlFile.open(path, dir, 'test log', (e) => seen.push(e))
    await file.append([{ n: 1 }, { n: 2 }])
    fsFault.code = 'ENOSPC'
    fsFault.partial = true
    await expect(file.append([{ n: 3, pad: 'x'.repeat(200) }])).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'disk_full' } })
    expect(await lines(path)).toEqual([{ n: 1 }, { n: 2 }])
    fsFault.code = 'EIO'
    await expect(file.append([{ n: 3 }])).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'io_error' } })
    fsFault.code = undefined
    await file.append([{ n: 4 }])
    expect(await lines(path)).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }])
    expect(seen.map((e) => (e === undefined ? 'ok' : (e as { details: { reason: string } }).details.reason))).toEqual(['ok', 'disk_full', 'io_error', 'ok'])
    await file.close()
  })

  it('concurrent appends share one write and one fdatasync (group commit), each resolving once it is on disk', async () => {
    const path = join(dir, 'log.jsonl')
    const { file } = await JsonlFile.open(path, dir, 'test log', () => undefined)
    await file.append([{ first: true }])
    fsFault.counts = {}
    await Promise.all(Array.from({ length: 20 }, (_, i) => file.append([{ i }])))
    expect(await lines(path)).toHaveLength(21)
    // At most the first append of the burst goes alone; everything queued behind a write goes in the next one.
    expect(fsFault.counts['datasync']).toBeLessThanOrEqual(2)
    expect(fsFault.counts['write']).toBeLessThanOrEqual(2)
    await file.close()
  })

  it('a torn tail left by a crash is dropped on open and cut by the next append', async () => {
    const path = join(dir, 'log.jsonl')
    await writeFile(path, '{"n":1}\n{"n":2}\n{"n":3,"tor')
    const { file, lines: read } = await JsonlFile.open(path, dir, 'test log', () => undefined)
    expect(read).toEqual([{ n: 1 }, { n: 2 }])
    await file.append([{ n: 4 }])
    expect(await lines(path)).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }])
    await file.close()
  })

  it('a compaction runs in the append queue: appends queued behind it land after it', async () => {
    const path = join(dir, 'log.jsonl')
    const { file } = await JsonlFile.open(path, dir, 'test log', () => undefined)
    await file.append([{ n: 1 }, { n: 2 }, { n: 3 }])
    const keep = [{ n: 3 }]
    await Promise.all([file.rewrite(() => keep), file.append([{ n: 4 }])])
    expect(await lines(path)).toEqual([{ n: 3 }, { n: 4 }])
    expect(file.lineCount).toBe(2)
    await file.close()
    await expect(file.append([{ n: 5 }])).rejects.toThrow(/closed/)
  })
})
