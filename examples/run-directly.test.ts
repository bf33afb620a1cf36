/**
 * Every program in `examples/` does what its README says when run on its own (`npx tsx <file>`):
 * it prints what it did and exits 0 (the server example prints where it listens and stops cleanly
 * on SIGINT). The programs run as separate processes on the built packages, as a user runs them.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url))
const TSX = here('../node_modules/tsx/dist/cli.mjs')
const BUILT = ['core', 'storage', 'registry', 'passport', 'index', 'interop'].map((p) => here(`../packages/${p}/dist/index.js`))

/** Runs `file` with tsx until it exits (or, with `stopOn`, until stdout matches it, then SIGINT). */
function run(file: string, stopOn?: RegExp): Promise<{ code: number | null; stdout: string; stderr: string }> {
  for (const b of BUILT) if (!existsSync(b)) throw new Error(`${b} is missing: run \`npm run build\` first (the root \`npm test\` does)`)
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('RON_') && k !== 'NODE_OPTIONS' && !k.startsWith('VITEST')) env[k] = v
  const child = spawn(process.execPath, [TSX, here(file)], { env: { ...env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s
    if (stopOn?.test(stdout) === true) child.kill('SIGINT')
  })
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })))
}

describe('examples run on their own and say what they did', () => {
  it('storage-app: stores with a token, reads back, refuses a write without one', async () => {
    const r = await run('./storage-app/app.ts')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/PUT \/o with a storage:write token → 201 b3:[0-9a-f]{64}/)
    expect(r.stdout).toContain('→ 200 "hello from an embedding app"')
    expect(r.stdout).toContain('PUT /o without a token → 401 Unauthorized (missing)')
  }, 60_000)

  it('github-webhook: a signed delivery stored as a receipt that re-verifies; a forged one refused', async () => {
    const r = await run('./github-webhook/app.ts')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/signed with the secret → 202, receipt b3:[0-9a-f]{64}/)
    expect(r.stdout).toContain('re-verifies with the secret: yes')
    expect(r.stdout).toContain('→ 401 Unauthorized (bad_signature), nothing stored')
  }, 60_000)

  it('mesh: a site published and read through the gateway, a webhook, a revoked token refused; then it exits', async () => {
    const r = await run('./mesh/mesh.ts')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain('GET http://hello-docs.localhost/ → 200 text/html; charset=utf-8')
    expect(r.stdout).toContain('GET http://hello-docs.localhost/style.css → 200 text/css; charset=utf-8: h1 { color: teal }')
    expect(r.stdout).toContain('a revoked token at storage → Unauthorized (revoked)')
    expect(r.stdout).toContain('mesh: closed')
  }, 60_000)

  it('cluster: three nodes; every node reads the object, those without a copy through another node', async () => {
    const r = await run('./cluster/cluster.ts')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout.match(/GET through n[0-9a-f]{16}'s gateway → 200, the same bytes/g)).toHaveLength(3)
    expect(r.stdout).toContain('cluster: closed')
  }, 120_000)

  it('hello-service: listens, and stops cleanly on SIGINT', async () => {
    const r = await run('./hello-service/app.ts', /listening on http:\/\/127\.0\.0\.1:\d+/)
    expect(r.stdout).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(try http:\/\/127\.0\.0\.1:\d+\/hello-svc\/hello\)/)
    expect(r.code, r.stderr).toBe(0)
  }, 60_000)
})
