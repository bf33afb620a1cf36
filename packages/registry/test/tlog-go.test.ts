/**
 * An independent transparency-log client verifies the registry: a small Go program
 * (`fixtures/go-tlog/main.go`) built only on Go's reference packages `golang.org/x/mod/sumdb/note`
 * and `sumdb/tlog` (Debian's `golang-go` and `golang-golang-x-mod-dev`), compiled at test time
 * into a temporary directory with nothing downloaded (GOPROXY=off, the module replaced by the
 * Debian sources). It checks the checkpoint's signature, every tile against the root, every leaf
 * of every entry bundle by its inclusion proof, the consistency of an older checkpoint, and that
 * tampered leaves, proofs, roots and signatures are rejected. Skipped, saying why, where Go or
 * the sources are absent (`.ci/run` installs both).
 */
import { execFile, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve, type RonServer } from '@ron/core'
import { ORIGIN, approve, harness, payload, type Harness } from './helpers.js'

const XMOD = process.env['RON_GO_XMOD'] ?? '/usr/share/gocode/src/golang.org/x/mod'
const FIXTURE = fileURLToPath(new URL('./fixtures/go-tlog', import.meta.url))

function goMissing(): string | undefined {
  const v = spawnSync('go', ['version'], { encoding: 'utf8' })
  if (v.error !== undefined || v.status !== 0) return 'the go command is not installed (apt-get install golang-go)'
  if (!existsSync(join(XMOD, 'sumdb', 'tlog', 'tlog.go')) || !existsSync(join(XMOD, 'sumdb', 'note', 'note.go'))) {
    return `golang.org/x/mod is not at ${XMOD} (apt-get install golang-golang-x-mod-dev, or set RON_GO_XMOD)`
  }
  return undefined
}

const missing = goMissing()
if (missing !== undefined) console.warn(`skipping the Go tlog client tests: ${missing}`)

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd, timeout: 120_000, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1
      resolve({ code, stdout, stderr })
    })
  })
}

interface GoReport {
  origin: string
  treeSize: number
  extensions: string[]
  tilesFetched: number
  bundles: number
  leaves: number
  inclusionProofs: number
  consistency: string[]
  rejected: string[]
  error?: string
}

describe.skipIf(missing !== undefined)("Go's sumdb/note and sumdb/tlog verify the registry", () => {
  let dir: string
  let bin: string
  let h: Harness
  let server: RonServer
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-go-tlog-'))
    const src = join(dir, 'src')
    await mkdir(src)
    await copyFile(join(FIXTURE, 'main.go'), join(src, 'main.go'))
    await copyFile(join(FIXTURE, 'go.mod'), join(src, 'go.mod'))
    const env = { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=mod', GOPATH: join(dir, 'gopath') }
    const edit = await run('go', ['mod', 'edit', `-replace=golang.org/x/mod=${XMOD}`], env, src)
    expect(edit.stderr).toBe('')
    bin = join(dir, 'go-tlog')
    const build = await run('go', ['build', '-o', bin, '.'], env, src)
    expect(build.stderr, 'go build').toBe('')
    expect(build.code).toBe(0)
  }, 180_000)
  afterAll(async () => {
    await server?.close()
    await h?.close()
    await rm(dir, { recursive: true, force: true })
  })

  async function commit(i: number, p = payload(i)): Promise<void> {
    const pr = await h.client.propose(p)
    await h.client.commit(pr.proposalId, { approvals: approve(h.keys, pr.baseVersion, pr.payloadB3) })
  }

  it('checkpoint, tiles, every inclusion proof and a consistency proof of a fresh log; tampering rejected', async () => {
    h = await harness({}, 1, 1)
    server = await serve(h.svc, { port: 0 })
    const prefix = `${server.url}/registry`
    for (let i = 1; i <= 100; i++) await commit(i)
    const old = join(dir, 'old-checkpoint')
    await writeFile(old, h.svc.signedCheckpoint())
    // One entry over 64 KiB: its leaf carries the payload by address.
    await commit(101, { schemaVersion: 1, items: [{ kind: 'policy', name: 'big', rules: { blob: 'x'.repeat(80_000) } }] })
    // Past a full level-0 tile (256): partial tiles at levels 0 and 1 too.
    for (let i = 102; i <= 300; i++) await commit(i)

    const r = await run(bin, ['-url', prefix, '-vkey', h.svc.logKey, '-old', old], process.env)
    const report = JSON.parse(r.stdout) as GoReport
    expect(report.error).toBeUndefined()
    expect(r.code).toBe(0)
    expect(report).toMatchObject({ origin: ORIGIN, treeSize: 300, extensions: ['tree-hash sha256'], bundles: 2, leaves: 300, inclusionProofs: 300, consistency: ['100->300'] })
    expect(report.rejected).toEqual(['tampered leaf', 'tampered inclusion proof', 'wrong old root', 'forged signature'])
    expect(report.tilesFetched).toBeGreaterThanOrEqual(3)

    // The same client refuses the log under another key.
    const other = await harness({}, 1, 1)
    try {
      const wrongKey = await run(bin, ['-url', prefix, '-vkey', other.svc.logKey], process.env)
      expect(wrongKey.code).toBe(1)
      expect((JSON.parse(wrongKey.stdout) as GoReport).error).toMatch(/checkpoint/)
    } finally {
      await other.close()
    }
  }, 120_000)

  it('a BLAKE3 log says so in its checkpoint, and the SHA-256 client refuses it', async () => {
    const b = await harness({ treeHash: 'blake3' }, 1, 1)
    const s = await serve(b.svc, { port: 0 })
    try {
      const pr = await b.client.propose(payload(1))
      await b.client.commit(pr.proposalId, { approvals: approve(b.keys, 0, pr.payloadB3) })
      const r = await run(bin, ['-url', `${s.url}/registry`, '-vkey', b.svc.logKey], process.env)
      expect(r.code).toBe(1)
      expect(JSON.parse(r.stdout)).toMatchObject({ extensions: ['tree-hash blake3'], error: 'the checkpoint does not state the SHA-256 tree hash' })
    } finally {
      await s.close()
      await b.close()
    }
  })
})
