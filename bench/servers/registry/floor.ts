/**
 * The protocol floor of the registry's commit cycle (options `{ dir, signers }`): a
 * bare `node:http` server speaking the same four requests of a commit cycle with the least work each can do — propose hashes the body and answers an id; an approval is
 * parsed and its Ed25519 signature verified (node:crypto, cached KeyObject); commit appends a
 * record of an entry's size and fdatasyncs it, writes a 512-byte head record slot and fdatasyncs
 * it (the registry's two durable writes), and signs a checkpoint of the new size (Ed25519 over the
 * note text, the same shape as the registry's) before it answers. No auth, no validation, no
 * queue, no log, no Merkle tree. Like the registry it writes nothing for the checkpoint: Ed25519
 * is deterministic, so the checkpoint of a durable size can always be signed again, identically.
 */
import { createHash, createPublicKey, generateKeyPairSync, sign as cryptoSign, verify as cryptoVerify } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { blake3 } from '@ron/core'
import type { Approval, SignerSet } from '@ron/registry'
import type { ServerFactory } from '../../lib/server-child.js'
import { ORIGIN } from './shared.js'

const start: ServerFactory = async (options) => {
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
export default start
