import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ed25519 } from '@noble/curves/ed25519.js'
import { generateLogKey, noteSigner, parseNote, signCheckpoint, signatureLine, verifyNote } from '../src/checkpoint.js'
import { COSIGNATURE_TYPE, cosign, cosigner, parseCosignerKey, verifyCosignature } from '../src/cosignature.js'

describe('signed notes (C2SP signed-note)', () => {
  it('verifies the specification example', () => {
    const note = 'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n'
    expect(verifyNote(note, 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k').text).toBe('This is an example message.\n')
  })

  it('rejects a note in which any signature by the trusted key fails, even beside a valid one', () => {
    const signer = noteSigner('example.org/log', generateLogKey())
    const note = signCheckpoint({ origin: 'example.org/log', treeSize: 1, rootHash: Buffer.alloc(32, 1) }, signer)
    const failing = signatureLine(signer.name, signer.keyId, Buffer.alloc(64, 9))
    expect(() => verifyNote(note + failing, signer.verifierKey)).toThrow(/invalid signature/)
    // The failing line first, then the valid one: rejected too.
    const [text, sig] = [note.slice(0, note.lastIndexOf('\n\n') + 2), note.slice(note.lastIndexOf('\n\n') + 2)]
    expect(() => verifyNote(text + failing + sig, signer.verifierKey)).toThrow(/invalid signature/)
    // A line of another key (same name, another id) is ignored; without the trusted key's line, nothing verifies.
    const other = noteSigner('example.org/log', generateLogKey())
    expect(verifyNote(note + signatureLine(other.name, other.keyId, Buffer.alloc(64)), signer.verifierKey).text).toBe(text.slice(0, -1))
    expect(() => verifyNote(text + signatureLine(other.name, other.keyId, Buffer.alloc(64)), signer.verifierKey)).toThrow(/no signature/)
  })
})

describe('witness cosignatures (C2SP tlog-cosignature, Ed25519)', () => {
  const text = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'

  it('match an implementation written from the specification: key id with type 0x04, timestamp, message', () => {
    const c = cosigner('witness.example.com/w1', generateLogKey())
    const line = cosign(text, c, 1_679_315_147)
    // Independently: key id = SHA-256(name || "\n" || 0x04 || key)[:4]; signature = u64 time || Ed25519 over
    // "cosignature/v1\ntime <t>\n" || text.
    const id = createHash('sha256').update('witness.example.com/w1\n').update(Uint8Array.of(4)).update(c.publicKey).digest().subarray(0, 4)
    const raw = Buffer.from(line.trim().split(' ')[2]!, 'base64')
    expect(raw.length).toBe(4 + 8 + 64)
    expect(raw.subarray(0, 4)).toEqual(id)
    expect(raw.readBigUInt64BE(4)).toBe(1_679_315_147n)
    expect(ed25519.verify(raw.subarray(12), Buffer.from(`cosignature/v1\ntime 1679315147\n${text}`), c.publicKey)).toBe(true)
    expect(c.verifierKey).toBe(`witness.example.com/w1+${id.toString('hex')}+${Buffer.concat([Uint8Array.of(COSIGNATURE_TYPE), c.publicKey]).toString('base64')}`)
    expect(verifyCosignature(`${text}\n${line}`, c.verifierKey)).toEqual({ name: 'witness.example.com/w1', timestamp: 1_679_315_147 })
  })

  it('is rejected on another text or time, ignored for another key, and never taken for a log signature', () => {
    const c = cosigner('w.example/1', generateLogKey())
    const line = cosign(text, c, 1_700_000_000)
    expect(() => verifyCosignature(`${text.replace('20852163', '20852164')}\n${line}`, c.verifierKey)).toThrow(/does not verify/)
    const raw = Buffer.from(line.trim().split(' ')[2]!, 'base64')
    raw.writeBigUInt64BE(1_700_000_001n, 4)
    expect(() => verifyCosignature(`${text}\n${signatureLine(c.name, raw.subarray(0, 4), raw.subarray(4))}`, c.verifierKey)).toThrow(/does not verify/)
    expect(verifyCosignature(`${text}\n${line}`, cosigner('w.example/1', generateLogKey()).verifierKey)).toBeUndefined()
    // The same key as a note (log) key has another id: a cosignature is no log signature.
    const asLog = noteSigner('w.example/1', c.privateKey)
    expect(() => verifyNote(`${text}\n${line}`, asLog.verifierKey)).toThrow(/no signature/)
    expect(() => parseCosignerKey(asLog.verifierKey)).toThrow(/type 0x04/)
    expect(() => parseCosignerKey(c.verifierKey.replace(/\+[0-9a-f]{8}\+/, '+00000000+'))).toThrow(/does not match/)
    expect(() => cosign(text, c, 0)).toThrow()
    expect(parseNote(`${text}\n${line}`).signatures[0]!.name).toBe('w.example/1')
  })
})
