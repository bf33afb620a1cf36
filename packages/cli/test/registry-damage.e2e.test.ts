/**
 * A damaged registry log through the real binary (issue 20 item 4): `ron-node start` refuses it
 * with a non-zero exit naming the file and `ron-node registry fsck`; fsck reports what the head
 * record says was acknowledged and what is missing; `--repair` refuses to touch damage and fixes
 * only a torn tail past the head record (a crash mid-append, never acknowledged). An acknowledged
 * last record cut short or bit-flipped (it used to be dropped as a "torn tail") or rewritten with a
 * recomputed CRC refuses the start too, and nothing is cut.
 */

import { cp, mkdtemp, open, readFile, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  admin: string
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-regdmg-'))
})
afterEach(killAll)
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

function start(dataDir: string): Proc {
  return spawnCli(['start', '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', '--data-dir', dataDir])
}

async function stop(proc: Proc): Promise<number | null> {
  proc.child.kill('SIGTERM')
  return (await proc.exited).code
}

/** Byte offset and length of a segment's last record (framing: u32 length, u32 crc32, bytes). */
function lastRecord(buf: Buffer): { off: number; len: number } {
  let last = { off: -1, len: 0 }
  for (let off = 0; off + 8 <= buf.length; ) {
    last = { off, len: buf.readUInt32BE(off) }
    off += 8 + last.len
  }
  return last
}

/** A node's data directory with `n` commits made through the CLI, stopped. */
async function committed(dataDir: string, n: number): Promise<void> {
  const proc = start(dataDir)
  const summary = await firstJsonLine<Summary>(proc, 60_000)
  const ok = async (...args: string[]): Promise<string> => {
    const r = await runCli([...args, '--node', summary.admin, '--data-dir', dataDir])
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
    return r.stdout.trim()
  }
  const set = join(dataDir, '..', 'set.json')
  for (let i = 1; i <= n; i++) {
    await writeFile(set, JSON.stringify({ schemaVersion: 1, items: [], meta: { note: `commit ${i}` } }))
    const { proposalId } = JSON.parse(await ok('registry', 'propose', set, '--json')) as { proposalId: string }
    await ok('registry', 'approve', proposalId)
    expect(JSON.parse(await ok('registry', 'commit', proposalId, '--json'))).toMatchObject({ version: i })
  }
  expect(await stop(proc)).toBe(0)
}

describe('ron-node on a damaged registry log (real binary)', () => {
  // Both tests damage a log of two commits made through the CLI: it is made once, and each test
  // damages its own copy of the stopped node's data directory.
  let template: string
  beforeAll(async () => {
    template = join(root, 'template')
    await committed(template, 2)
  }, 180_000)

  it('start refuses a cut log and names the file; fsck reports; --repair fixes only a torn tail past the head record', async () => {
    const dataDir = join(root, 'node')
    const regDir = join(dataDir, 'registry')
    await cp(template, dataDir, { recursive: true })
    let proc: Proc
    const backup = join(root, 'registry-backup')
    await cp(regDir, backup, { recursive: true })
    const seg = (await readdir(regDir)).find((f) => f.startsWith('seg-'))!

    // truncate -s 0 of the segment: start refuses (it used to come up at v0 and accept a fork).
    await truncate(join(regDir, seg), 0)
    proc = start(dataDir)
    const exited = await Promise.race([proc.exited, firstJsonLine(proc, 60_000).then(() => 'started' as const)])
    expect(exited, 'start must refuse the damaged log').not.toBe('started')
    expect((exited as { code: number | null }).code).toBe(5)
    expect(proc.stderr()).toContain(seg)
    expect(proc.stderr()).toContain('head.bin')
    expect(proc.stderr()).toContain('ron-node registry fsck')

    const fsck = await runCli(['registry', 'fsck', '--data-dir', dataDir])
    expect(fsck.code).toBe(5)
    expect(fsck.stdout).toMatch(/recorded {3}head\.bin: version 2 b3:/)
    expect(fsck.stdout).toMatch(new RegExp(`PROBLEM {4}${seg}: the log ends at version 0, but head\\.bin records version 2`))
    const refused = await runCli(['registry', 'fsck', '--repair', '--data-dir', dataDir])
    expect(refused.code).toBe(5)
    expect(refused.stdout).toMatch(/Nothing was changed/)
    expect((await stat(join(regDir, seg))).size).toBe(0)

    // Restored from the backup, then a crash mid-append leaves a torn record past the head record.
    await rm(regDir, { recursive: true })
    await cp(backup, regDir, { recursive: true })
    const size = (await stat(join(regDir, seg))).size
    const fh = await open(join(regDir, seg), 'a')
    await fh.write(Buffer.from([0, 0, 2, 0, 1, 2, 3, 4, 123, 34]))
    await fh.close()
    const report = await runCli(['registry', 'fsck', '--data-dir', dataDir])
    expect(report.code).toBe(0)
    expect(report.stdout).toMatch(/warning {4}torn_tail × 1/)
    const repaired = await runCli(['registry', 'fsck', '--repair', '--data-dir', dataDir, '--json'])
    expect(repaired.code, repaired.stderr).toBe(0)
    expect(JSON.parse(repaired.stdout)).toMatchObject({ ok: true, head: 2, repaired: { torn_tail: 1 } })
    expect((await stat(join(regDir, seg))).size).toBe(size)
    expect(JSON.parse((await runCli(['registry', 'fsck', '--data-dir', dataDir, '--json'])).stdout)).toMatchObject({ ok: true, warnings: [] })

    proc = start(dataDir)
    const again = await firstJsonLine<Summary>(proc, 60_000)
    const head = await runCli(['registry', 'head', '--json', '--node', again.admin])
    expect(JSON.parse(head.stdout)).toMatchObject({ version: 2 })
    expect(await stop(proc)).toBe(0)
    expect(await readFile(join(regDir, 'head.bin'))).toHaveLength(1024)
  }, 240_000)

  it('start refuses an acknowledged last record cut short, bit-flipped or rewritten with a recomputed CRC (was: dropped as a torn tail)', async () => {
    const dataDir = join(root, 'last-record')
    const regDir = join(dataDir, 'registry')
    await cp(template, dataDir, { recursive: true })
    const seg = (await readdir(regDir)).find((f) => f.startsWith('seg-'))!
    const good = await readFile(join(regDir, seg))
    const last = lastRecord(good)
    expect(last.off).toBeGreaterThan(0)
    const damages: Array<[string, () => Buffer]> = [
      ['cut half-way', () => good.subarray(0, last.off + 8 + Math.floor(last.len / 2))],
      [
        'one bit flipped',
        () => {
          const b = Buffer.from(good)
          b[last.off + 8 + Math.floor(last.len / 2)]! ^= 0x10
          return b
        },
      ],
      [
        'rewritten, CRC recomputed',
        () => {
          const b = Buffer.from(good)
          const body = b.subarray(last.off + 8, last.off + 8 + last.len)
          const text = body.toString('utf8')
          const forged = Buffer.from(text.replace('commit 2', 'commit 9'))
          expect(forged.length).toBe(last.len)
          expect(forged.equals(body)).toBe(false)
          forged.copy(b, last.off + 8)
          b.writeUInt32BE(crc32(forged), last.off + 4)
          return b
        },
      ],
    ]
    for (const [what, damage] of damages) {
      const damaged = damage()
      await writeFile(join(regDir, seg), damaged)
      const proc = start(dataDir)
      const exited = await Promise.race([proc.exited, firstJsonLine(proc, 60_000).then(() => 'started' as const)])
      expect(exited, `${what}: start must refuse`).not.toBe('started')
      expect((exited as { code: number | null }).code, what).toBe(5)
      expect(proc.stderr(), what).toContain(seg)
      expect(proc.stderr(), what).toContain('ron-node registry fsck')
      // --repair refuses to cut an acknowledged record (it used to be cut as a torn tail).
      if (what === 'one bit flipped') expect((await runCli(['registry', 'fsck', '--repair', '--data-dir', dataDir])).code, what).toBe(5)
      // Nothing was cut or rewritten.
      expect((await readFile(join(regDir, seg))).equals(damaged), what).toBe(true)
    }
    // The undamaged log starts at the head it acknowledged.
    await writeFile(join(regDir, seg), good)
    const proc = start(dataDir)
    const summary = await firstJsonLine<Summary>(proc, 60_000)
    expect(JSON.parse((await runCli(['registry', 'head', '--json', '--node', summary.admin])).stdout)).toMatchObject({ version: 2 })
    expect(await stop(proc)).toBe(0)
  }, 180_000)
})
