/**
 * Registry benchmarks (issues 12 item 8 and 22 item 5), each beside its baseline:
 *
 * 1. commits/s — propose → 2 approvals (2-of-3, signed in the client) → commit with fsync and the
 *    new tree's signed checkpoint, one client over HTTP to the registry in its own process, vs a
 *    bare loop of `write` + `fsync` of a record of the same size to a file on the same disk;
 *    beside them the protocol floor (a bare node:http server doing the same requests, signature
 *    checks, durable write and checkpoint signature, goal ≥ 0.8×) and the two-request cycle (the
 *    commit carrying its approvals), for the registry and for the floor; and the server CPU per
 *    commit of the registry and of the floor;
 * 2. `GET /registry/head` and `GET /registry/tile/0/000` (a full C2SP tile, 8 KiB) req/s
 *    (autocannon -c50 from the load process) vs a bare `node:http` server answering the same
 *    bytes with the same headers, each in its own process (goal ≥ 0.9×);
 * 3. proof generation in a tree of 1M entries (built in bulk, SHA-256, the default): inclusion and
 *    consistency proofs beside the cost of verifying one.
 *
 * Servers: `servers/registry/registry.ts`, `floor.ts` (the protocol floor) and `bare-read.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport } from '@ron/core'
import {
  MerkleTree,
  sha256TreeHasher,
  createRegistryClient,
  generateSignerKey,
  signApproval,
  verifyInclusion,
  type DescriptorSet,
  type SignerSet,
} from '@ron/registry'
import { CpuPerRequest, FULL, alternate, compare, printRounds, ratios, report } from '../lib/harness.js'
import { spawnLoad, spawnServer } from '../lib/process.js'
import { ORIGIN } from '../servers/registry/shared.js'

function payload(i: number): DescriptorSet {
  return { schemaVersion: 1, items: [{ kind: 'service', name: `storage.node-${i}`, service: 'storage', node: `node-${i}`, endpoint: `http://10.0.${(i >> 8) & 255}.${i & 255}:7701` }] }
}

export async function run(): Promise<void> {
  // RON_BENCH_REGISTRY=commits,head (say) runs only those parts (A/B runs); all three by default.
  const parts = new Set((process.env['RON_BENCH_REGISTRY'] ?? 'commits,head,proofs').split(','))
  // Ratios are only comparable on a quiet machine: say how quiet this one was.
  console.log(`(load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${cpus().length} cores)`)
  const dir = mkdtempSync(join(tmpdir(), 'ron-bench-registry-'))
  const stops: Array<{ stop(): Promise<void> }> = []
  try {
    const keys = ['s1', 's2', 's3'].map(generateSignerKey)
    const signers: SignerSet = { threshold: 2, signers: keys.map((k) => ({ id: k.id, publicKey: k.publicKey })) }
    const registry = await spawnServer('ron registry (2-of-3, fsync)', './servers/registry/registry.ts', { dir: join(dir, 'log'), signers })
    stops.push(registry)
    const floor = await spawnServer('protocol floor (bare node:http)', './servers/registry/floor.ts', { dir: join(dir, 'floor'), signers })
    stops.push(floor)
    const transport = new HttpTransport({ targets: { registry: registry.url, floor: floor.url } })
    const client = createRegistryClient(transport, { token: String(registry.extra.token) })
    const floorClient = createRegistryClient(transport, { target: 'floor' })
    const seconds = FULL ? 3 : 1

    // 1. Commits/s vs a bare fsync'd append loop on the same disk, and vs the protocol floor (the
    //    same client and the same four requests against a bare node:http server doing the least).
    //    Signing uses node:crypto with the private KeyObject held (what a real signer does).
    let n = 0
    // The floor of a two-request cycle (propose, then a commit carrying its approvals).
    // The registry's two-request cycle: the commit carries the approvals (optional commit body).
    const registryTwoRequestRound = async (): Promise<number> => {
      const t0 = performance.now()
      let done = 0
      while (performance.now() - t0 < seconds * 1000) {
        const p = await client.propose(payload(++n))
        const approvals = keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
        await client.commit(p.proposalId, { approvals })
        done++
      }
      return done / ((performance.now() - t0) / 1000)
    }
    const twoRequestRound = async (): Promise<number> => {
      const t0 = performance.now()
      let done = 0
      while (performance.now() - t0 < seconds * 1000) {
        const p = await floorClient.propose(payload(++n))
        const approvals = keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
        const res = await transport.request('floor', { method: 'POST', path: `/registry/commit/${p.proposalId}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ approvals }) })
        if (res.status !== 201) throw new Error(`floor commit answered ${res.status}`)
        await res.dump()
        done++
      }
      return done / ((performance.now() - t0) / 1000)
    }
    // Server CPU per commit cycle: the floor's and the registry's, over the same rounds.
    const cpu = new CpuPerRequest(2)
    const cycles = [0, 0]
    const commitRound = (c: typeof client, cpuIndex: number, pid: number) => (): Promise<number> =>
      cpu.around(
        cpuIndex,
        pid,
        async () => {
          const t0 = performance.now()
          let done = 0
          while (performance.now() - t0 < seconds * 1000) {
            const p = await c.propose(payload(++n))
            for (const k of keys.slice(0, 2)) await c.approve(p.proposalId, signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
            await c.commit(p.proposalId)
            done++
          }
          cycles[cpuIndex] = done
          return done / ((performance.now() - t0) / 1000)
        },
        // Per HTTP request, as the title says: each cycle is 4 requests (propose, 2 approvals, commit).
        () => cycles[cpuIndex]! * 4,
      )
    // About the size of a committed entry with two approvals.
    const record = Buffer.alloc(520, 0x61)
    const fh = await open(join(dir, 'bare-append.log'), 'a')
    const fsyncRound = async (): Promise<number> => {
      const t0 = performance.now()
      let done = 0
      while (performance.now() - t0 < seconds * 1000) {
        await fh.write(record)
        await fh.sync()
        done++
      }
      return done / ((performance.now() - t0) / 1000)
    }
    try {
      if (parts.has('commits')) await commitsPart()
    } finally {
      await fh.close()
    }
    async function commitsPart(): Promise<void> {
      const commits = await alternate(
        [
          { name: `bare write+fsync loop (${record.length} B records)`, measure: fsyncRound },
          { name: 'protocol floor (same 4 requests, bare node:http)', measure: commitRound(floorClient, 0, floor.pid) },
          { name: 'registry commits (propose + 2 approvals + commit)', measure: commitRound(client, 1, registry.pid) },
          { name: 'floor, 2 requests (commit carrying its approvals)', measure: twoRequestRound },
          { name: 'registry, 2 requests (commit carrying its approvals)', measure: registryTwoRequestRound },
        ],
        { rounds: FULL ? 7 : 5 },
      )
      printRounds(
        `Commits/s, ${seconds} s per round, one client over HTTP (goal >= 0.8x of the protocol floor)`,
        'ops/s',
        ['bare write+fsync loop', 'protocol floor (bare node:http, 4 requests)', 'registry commit (4 requests, 2 fdatasyncs)', 'floor, 2 requests (commit + approvals)', 'registry, 2 requests (commit + approvals)'],
        commits,
        {
          note: 'Each commit cycle is 4 HTTP round trips and 2 Ed25519 signatures in the client, 2 verifications, 2 fdatasyncs (the record, then the head record) and 1 checkpoint signature in the server. The floor row is a bare node:http server doing only that (no auth, validation, queue, log or Merkle tree): the most a serial cycle can reach. The last two rows carry the approvals in the commit (optional commit body): 2 requests per cycle, the floor and the registry.',
        },
      )
      const r = ratios(commits, 2, 1)
      const r2 = ratios(commits, 4, 3)
      console.log(`registry vs protocol floor: ${r.median.toFixed(2)}x [${r.min.toFixed(2)}..${r.max.toFixed(2)}] (4 requests), ${r2.median.toFixed(2)}x [${r2.min.toFixed(2)}..${r2.max.toFixed(2)}] (2 requests)`)
      cpu.print('Commit cycles (4 requests)', ['protocol floor (bare node:http)', 'registry'], FULL ? 7 : 5)
    }

    // 2. GET /registry/head and a full tile, req/s vs bare node:http answering the same bytes.
    if (parts.has('head')) await readsPart()
    async function readsPart(): Promise<void> {
      // A full level-0 tile needs 256 entries.
      while ((await client.head()).version < 256) {
        const p = await client.propose(payload(++n))
        await client.commit(p.proposalId, { approvals: keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })) })
      }
      const head = await client.head()
      const tile = await client.tile('tile/0/000')
      const bare = await spawnServer('bare node:http (same bytes)', './servers/registry/bare-read.ts', { head, tile: Buffer.from(tile).toString('base64') })
      stops.push(bare)
      // The baseline must answer what the registry answers: the same body and headers, but the
      // ones every server writes per response (date, connection) and the SPEC's correlation id.
      for (const path of ['/registry/head', '/registry/tile/0/000']) {
        const [a, b] = await Promise.all([bare, registry].map(async (s) => {
          const r = await fetch(s.url + path)
          const headers = [...r.headers].filter(([k]) => !['date', 'connection', 'keep-alive', 'x-corr-id'].includes(k))
          return JSON.stringify([r.status, headers.sort(), Buffer.from(await r.arrayBuffer()).toString('base64')])
        }))
        if (a !== b) throw new Error(`bare-read answers ${path} differently from the registry:\n${a}\n${b}`)
      }
      const load = await spawnLoad()
      stops.push(load)
      for (const [path, what] of [
        ['/registry/head', 'GET /registry/head'],
        ['/registry/tile/0/000', 'GET /registry/tile/0/000 (full tile, 8 KiB)'],
      ] as const) {
        const cpuReads = new CpuPerRequest(2)
        const rps = await alternate(
          [bare, registry].map((s, i) => ({
            name: s.name,
            measure: async (): Promise<number> => {
              const r = await cpuReads.around(i, s.pid, () => load.run({ kind: 'rate', url: s.url, path, connections: 50, durationSec: FULL ? 5 : 1 }), (x) => x.requests)
              if ((r.statuses['non2xx'] ?? 0) > 0) throw new Error(`${s.name}: non-2xx answers`)
              return r.rps
            },
          })),
          { rounds: FULL ? 7 : 5 },
        )
        printRounds(`${what}, autocannon -c50 (goal >= 0.9x)`, 'req/s', [bare.name, registry.name], rps)
        cpuReads.print(what, [bare.name, registry.name], FULL ? 7 : 5)
      }
    }
    await transport.close()

    // 3. Proofs at 1M entries.
    if (!parts.has('proofs')) return
    const size = 1_000_000
    const t0 = performance.now()
    const tree = new MerkleTree(sha256TreeHasher)
    const leaf = Buffer.alloc(64)
    for (let i = 0; i < size; i++) {
      leaf.writeUInt32BE(i, 0)
      tree.appendData(leaf)
    }
    console.log(`\n(built a ${size.toLocaleString('en-US')}-leaf SHA-256 tree in ${((performance.now() - t0) / 1000).toFixed(1)} s)`)
    let i = 0
    const root = tree.root()
    const fixed = tree.inclusionProof(123_456, size)
    const rows = await compare(
      { name: 'verify one inclusion proof (baseline)', fn: () => verifyInclusion(sha256TreeHasher, 123_456, size, tree.leafHash(123_456), fixed, root) },
      [
        { name: 'inclusion proof, random leaf, size 1M', fn: () => tree.inclusionProof((i = (i * 7919 + 13) % size), size) },
        { name: 'consistency proof, random old size → 1M', fn: () => tree.consistencyProof(1 + ((i = (i * 7919 + 13) % (size - 1))), size) },
        { name: 'root of a random older size', fn: () => tree.root(1 + ((i = (i * 7919 + 13) % size))) },
      ],
      { ops: FULL ? 20_000 : 5000, rounds: FULL ? 7 : 5 },
    )
    report('Proof generation at 1M entries (ops/s, ratio vs one verification)', rows)
  } finally {
    for (const s of stops.reverse()) await s.stop().catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  }
}
