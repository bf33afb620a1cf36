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
 * This module is also the server factory of its out-of-process servers (default export, started
 * by `server-child.ts` with `{ mode: 'registry' | 'bare' | 'floor', dir, signers, origin }`).
 */
import { createHash, createPublicKey, generateKeyPairSync, sign as cryptoSign, verify as cryptoVerify } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport, blake3, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import {
  MerkleTree,
  sha256TreeHasher,
  createRegistryClient,
  createRegistryService,
  generateSignerKey,
  signApproval,
  verifyInclusion,
  type Approval,
  type DescriptorSet,
  type SignerSet,
} from '@ron/registry'
import { CpuPerRequest, FULL, alternate, compare, printRounds, ratios, report } from './harness.js'
import { spawnLoad, spawnServer } from './process.js'
import type { ServerFactory } from './server-child.js'

const ORIGIN = 'bench.ron/registry'

/** Server factory: the registry on its defaults (plus a data dir), or the bare read baseline. */
const start: ServerFactory = async (options) => {
  if (options.mode === 'bare') {
    // The same bytes and headers the registry answers: HEAD's JSON, and a full tile.
    const body = JSON.stringify(options.head)
    const tile = Buffer.from(String(options.tile), 'base64')
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/registry/head') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-cache' })
        res.end(body)
        return
      }
      if (req.method === 'GET' && req.url === '/registry/tile/0/000') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': tile.length, 'cache-control': 'public, max-age=31536000, immutable' })
        res.end(tile)
        return
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
  }
  if (options.mode === 'floor') return startFloor(options)
  const issuer = createTestIssuer()
  const svc = await createRegistryService({ dataDir: String(options.dir), origin: ORIGIN, signers: options.signers as SignerSet, auth: { keys: issuer.keys } })
  const server = await serve(svc, { port: 0 })
  const token = issuer.mint({ scope: ['registry:propose', 'registry:approve', 'registry:commit'], aud: 'registry', ttlSec: 86_400 })
  return {
    url: server.url,
    extra: { token },
    close: async () => {
      await server.close()
      await svc.close()
    },
  }
}
export default start

/**
 * The protocol floor: a bare `node:http` server speaking the same four requests of a commit cycle
 * with the least work each can do — propose hashes the body and answers an id; an approval is
 * parsed and its Ed25519 signature verified (node:crypto, cached KeyObject); commit appends a
 * record of an entry's size and fdatasyncs it, writes a 512-byte head record slot and fdatasyncs
 * it (the registry's two durable writes), and signs a checkpoint of the new size (Ed25519 over the
 * note text, the same shape as the registry's) before it answers. No auth, no validation, no
 * queue, no log, no Merkle tree. Like the registry it writes nothing for the checkpoint: Ed25519
 * is deterministic, so the checkpoint of a durable size can always be signed again, identically.
 */
const startFloor: ServerFactory = async (options) => {
  const signers = (options.signers as SignerSet).signers
  const keyObjects = new Map(signers.map((s) => [s.id, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: s.publicKey }, format: 'jwk' })]))
  const dir = String(options.dir)
  mkdirSync(dir, { recursive: true })
  const fh = await open(join(dir, 'floor.log'), 'a')
  // The registry's commit makes its record durable, then its head record (a 512-byte slot of
  // head.bin, alternating), each by fdatasync: the floor does the same two durable writes.
  const headFile = await open(join(dir, 'floor-head.bin'), 'w')
  const slot = Buffer.alloc(512, 0x68)
  const proposals = new Map<string, { payloadB3: string; baseVersion: number; approvals: number }>()
  let version = 0
  let seq = 0
  const record = Buffer.alloc(520, 0x61)
  const logKey = generateKeyPairSync('ed25519').privateKey
  let root = Buffer.alloc(32)
  let checkpoint = ''
  const signCheckpoint = (): void => {
    root = createHash('sha256').update(root).update(record).digest()
    const text = `${ORIGIN}\n${version}\n${root.toString('base64')}\ntree-hash sha256\n`
    checkpoint = `${text}\n\u2014 ${ORIGIN} ${Buffer.concat([root.subarray(0, 4), cryptoSign(null, Buffer.from(text), logKey)]).toString('base64')}\n`
  }
  const approve = (p: { payloadB3: string; baseVersion: number; approvals: number }, a: Approval): boolean => {
    const key = keyObjects.get(a.signerId)
    const msg = Buffer.from(`ron:registry:v1\n${ORIGIN}\n${p.baseVersion}\n${p.payloadB3}`)
    if (key === undefined || !cryptoVerify(null, msg, key, Buffer.from(a.sig, 'base64url'))) return false
    p.approvals++
    return true
  }
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = req.url ?? ''
      const body = Buffer.concat(chunks)
      if (url === '/registry/proposals') {
        JSON.parse(body.toString('utf8'))
        const id = `p-${++seq}`
        const p = { payloadB3: `b3:${Buffer.from(blake3(body)).toString('hex')}`, baseVersion: version, approvals: 0 }
        proposals.set(id, p)
        send(res, 202, { proposalId: id, payloadB3: p.payloadB3, baseVersion: p.baseVersion, expiresAt: Date.now() + 600_000 })
      } else if (url.startsWith('/registry/approvals/')) {
        const p = proposals.get(url.slice('/registry/approvals/'.length))
        if (p === undefined || !approve(p, JSON.parse(body.toString('utf8')) as Approval)) return send(res, 422, { code: 'InvalidSignature' })
        send(res, 200, { approvals: p.approvals, quorum: { m: 2, n: 3 }, ready: p.approvals >= 2 })
      } else if (url.startsWith('/registry/commit/')) {
        const id = url.slice('/registry/commit/'.length)
        const p = proposals.get(id)
        if (p === undefined) return send(res, 404, { code: 'NotFound' })
        // A commit may carry its approvals (`{approvals: [...]}`): the two-request cycle.
        if (body.length > 0) for (const a of (JSON.parse(body.toString('utf8')) as { approvals: Approval[] }).approvals) if (!approve(p, a)) return send(res, 422, { code: 'InvalidSignature' })
        if (p.approvals < 2) return send(res, 422, { code: 'QuorumNotMet' })
        proposals.delete(id)
        fh.write(record)
          .then(() => fh.datasync())
          .then(() => headFile.write(slot, 0, slot.length, (version % 2) * slot.length))
          .then(() => headFile.datasync())
          .then(() => {
            version++
            signCheckpoint()
            send(res, 201, { version, payloadB3: p.payloadB3, committedAt: Date.now(), treeSize: version, root: root.toString('hex'), hash: 'b3:00' })
          })
          .catch(() => send(res, 500, { code: 'Internal' }))
      } else if (url === '/registry/checkpoint') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(checkpoint)
      } else send(res, 404, { code: 'NotFound' })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    extra: { token: 'none' },
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()))
      await fh.close()
      await headFile.close()
    },
  }
}

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
    const registry = await spawnServer('ron registry (2-of-3, fsync)', './registry.bench.ts', { mode: 'registry', dir: join(dir, 'log'), signers })
    stops.push(registry)
    const floor = await spawnServer('protocol floor (bare node:http)', './registry.bench.ts', { mode: 'floor', dir: join(dir, 'floor'), signers })
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
        () => cycles[cpuIndex]!,
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
      const bare = await spawnServer('bare node:http (same bytes)', './registry.bench.ts', { mode: 'bare', head, tile: Buffer.from(tile).toString('base64') })
      stops.push(bare)
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
