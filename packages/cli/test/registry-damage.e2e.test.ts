/**
 * A damaged registry log through the real binary (issue 20 item 4): `ron-node start` refuses it
 * with a non-zero exit naming the file and `ron-node registry fsck`; fsck reports what the head
 * record says was acknowledged and what is missing; `--repair` refuses to touch damage and fixes
 * only a torn tail past the head record (a crash mid-append, never acknowledged).
 */

import { cp, mkdtemp, open, readFile, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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

describe('ron-node on a damaged registry log (real binary)', () => {
  it('start refuses a cut log and names the file; fsck reports; --repair fixes only a torn tail past the head record', async () => {
    const dataDir = join(root, 'node')
    const regDir = join(dataDir, 'registry')
    let proc = start(dataDir)
    const summary = await firstJsonLine<Summary>(proc, 60_000)
    const ok = async (...args: string[]): Promise<string> => {
      const r = await runCli([...args, '--node', summary.admin, '--data-dir', dataDir])
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
      return r.stdout.trim()
    }
    const set = join(root, 'set.json')
    for (let i = 1; i <= 2; i++) {
      await writeFile(set, JSON.stringify({ schemaVersion: 1, items: [], meta: { note: `commit ${i}` } }))
      const { proposalId } = JSON.parse(await ok('registry', 'propose', set, '--json')) as { proposalId: string }
      await ok('registry', 'approve', proposalId)
      expect(JSON.parse(await ok('registry', 'commit', proposalId, '--json'))).toMatchObject({ version: i })
    }
    expect(await stop(proc)).toBe(0)
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
})
