/**
 * Three real `ron-node` processes: node A runs a registry log; nodes B and C witness it (C2SP
 * tlog-witness) and cosign each of its checkpoints; `ron-node registry verify` then verifies A's
 * whole log from its tiles and requires both cosignatures — trusting only A's log key, as
 * `ron-node status` prints it.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HttpTransport } from '@ron/core'
import { cosigner, createRegistryClient, generateLogKey, importSignerKey, noteSigner, signApproval, verifyCosignature } from '@ron/registry'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

interface StatusJson {
  registryKeys?: { logKey: string; witnessKey?: string }
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-witness-'))
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

function start(dir: string, config?: string): Proc {
  return spawnCli(['start', '--json', '--log-level', 'warn', '--port-base', '0', '--data-dir', dir, '--drain-deadline', '500ms', ...(config === undefined ? [] : ['--config', config])])
}

async function status(s: Summary): Promise<Required<StatusJson>['registryKeys']> {
  const r = await runCli(['status', '--json', '--node', s.admin])
  expect(r.code, r.stderr).toBe(0)
  const keys = (JSON.parse(r.stdout) as StatusJson).registryKeys
  expect(keys).toBeDefined()
  return keys!
}

describe('a log witnessed by two other nodes', () => {
  it('collects both cosignatures on every checkpoint; registry verify requires them and refuses what does not hold', async () => {
    const dirs = ['a', 'b', 'c'].map((n) => join(root, n))
    const a = start(dirs[0]!)
    const sa = await firstJsonLine<Summary>(a, 60_000)
    // status prints the log key in Go's note form (name+hash+base64 of 0x01 || key) and the witness key.
    const human = await runCli(['status', '--node', sa.admin])
    expect(human.code, human.stderr).toBe(0)
    const logKey = /^registry log key {2}(\S+)$/m.exec(human.stdout)?.[1] ?? ''
    expect(logKey).toMatch(/^ron\.registry\/[0-9a-f]{8}\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/)
    expect(human.stdout).toMatch(/^witness key {7}ron\.registry\/[0-9a-f]{8}\/witness\+/m)
    const logKeys = { logKey }
    const origin = logKeys.logKey.split('+')[0]!

    // B and C witness A's log (config file: registry.witness.logs).
    const config = join(root, 'witness.json')
    await writeFile(config, JSON.stringify({ registry: { witness: { logs: [{ origin, key: logKeys.logKey }] } } }))
    const [b, c] = [start(dirs[1]!, config), start(dirs[2]!, config)]
    const [sb, sc] = await Promise.all([firstJsonLine<Summary>(b, 60_000), firstJsonLine<Summary>(c, 60_000)])
    const witnessKeys = (await Promise.all([status(sb), status(sc)])).map((k) => k.witnessKey!)
    expect(new Set(witnessKeys).size).toBe(2)

    // A lists them as its witnesses (a live reload of the registry section).
    const token = (await readFile(sa.tokenFile, 'utf8')).trim()
    const witnesses = [sb, sc].map((s, i) => ({ name: witnessKeys[i]!.split('+')[0], url: `${s.services['registry']}/registry/witness`, key: witnessKeys[i] }))
    const reload = await fetch(`${sa.admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ registry: { witnesses } }) })
    expect(reload.status, await reload.text()).toBe(200)

    // Three commits on A, signed with A's own signer key (over HTTP: the CLI commands are tested elsewhere).
    const signer = importSignerKey(await readFile(join(dirs[0]!, 'registry', 'registry-signer.key'), 'utf8'))
    const transport = new HttpTransport({ targets: { registry: sa.services['registry']! } })
    try {
      const reg = createRegistryClient(transport, { token })
      for (let i = 1; i <= 3; i++) {
        const p = await reg.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: `p${i}`, rules: { n: i } }] })
        await reg.commit(p.proposalId, { approvals: [signApproval(signer, { origin, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })] })
      }
    } finally {
      await transport.close()
    }

    // A client with its own data dir: trust on first use, both witnesses required.
    const client = ['--node', sa.admin, '--data-dir', join(root, 'client')]
    const wflags = witnessKeys.flatMap((k) => ['--witness', k])
    const first = await runCli(['registry', 'verify', ...client, ...wflags])
    expect(first.code, first.stderr).toBe(0)
    expect(first.stderr).toContain(`pinned ${origin} on first use`)
    expect(first.stdout).toContain('tree       3 leaves, sha256')
    for (const k of witnessKeys) expect(first.stdout).toContain(`witness    ${k.split('+')[0]} cosigned at`)

    // The checkpoint A serves carries both cosignatures, each verifying under its witness's key.
    const note = await (await fetch(`${sa.services['registry']}/registry/checkpoint`)).text()
    for (const k of witnessKeys) expect(verifyCosignature(note, k)).toBeDefined()

    // The pinned key is checked and the tree proven to extend the one verified before.
    const again = await runCli(['registry', 'verify', ...client, '--log-key', logKeys.logKey, ...wflags, '--json'])
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, treeSize: 3, consistentWith: 3, cosignatures: [{}, {}] })

    // A witness that never cosigned, another key for the log, a malformed key: refused.
    const stranger = cosigner('stranger.example/w', generateLogKey()).verifierKey
    const noQuorum = await runCli(['registry', 'verify', ...client, '--witness', stranger, '--wait', '300'])
    expect(noQuorum.code).toBe(5)
    expect(noQuorum.stderr).toMatch(/0 valid cosignatures of the 1 witnesses given, 1 needed/)
    const wrongKey = await runCli(['registry', 'verify', ...client, '--log-key', noteSigner(origin, generateLogKey()).verifierKey])
    expect(wrongKey.code).toBe(5)
    expect(wrongKey.stderr).toContain('was pinned with another key')

    for (const p of [a, b, c]) p.child.kill('SIGTERM')
    for (const p of [a, b, c]) expect((await p.exited).code).toBe(0)
  }, 180_000)
})
