import { readFileSync, readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ed25519 } from '@noble/curves/ed25519.js'
import { canonicalJson } from '@ron/core'
import { canonicalPayload, descriptorSetSchema, payloadB3, type DescriptorSet } from '../src/descriptors.js'
import { encodeEntry, encodeEntrySpliced, type LogEntry } from '../src/entry.js'
import { approvalMessage, countQuorum, evaluateQuorum, exportSignerKey, generateSignerKey, importSignerKey, signApproval, verifyApprovalSig } from '../src/signers.js'
import {
  addCosignature,
  formatCheckpoint,
  generateLogKey,
  noteSigner,
  parseCheckpoint,
  parseNote,
  signCheckpoint,
  signatureLine,
  verifyCheckpoint,
} from '../src/checkpoint.js'

const vectors = new URL('./vectors/jcs/', import.meta.url)

describe('RFC 8785 canonical JSON', () => {
  it('matches the published test data of the RFC author', () => {
    const names = readdirSync(new URL('output/', vectors))
    expect(names.length).toBeGreaterThanOrEqual(6)
    for (const name of names) {
      const input = JSON.parse(readFileSync(new URL(`input/${name}`, vectors), 'utf8')) as unknown
      const expected = readFileSync(new URL(`output/${name}`, vectors), 'utf8')
      expect(canonicalJson(input), name).toBe(expected)
    }
  })

  it('serialises the numbers of RFC 8785 appendix B', () => {
    const cases: Array<[string, string]> = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
      ['43143ff3c1cb0959', '1424953923781206.2'],
    ]
    for (const [bits, text] of cases) {
      const n = Buffer.from(bits, 'hex').readDoubleBE(0)
      expect(canonicalJson(n), bits).toBe(text)
    }
  })

  it('rejects what JSON cannot carry: NaN, Infinity, lone surrogates, undefined, non-plain objects', () => {
    for (const bad of [NaN, Infinity, -Infinity, '\ud800', { a: undefined }, [1n], new Date(0), () => 1]) {
      expect(() => canonicalJson(bad)).toThrow(expect.objectContaining({ code: 'Malformed' }) as Error)
    }
  })

  it('is independent of key order and round-trips through JSON.parse (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalJson(v)
        expect(canonicalJson(JSON.parse(c))).toBe(c)
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
          const reversed = Object.fromEntries(Object.entries(v).reverse())
          expect(canonicalJson(reversed)).toBe(c)
        }
      }),
      { seed: 8785, numRuns: 300 },
    )
  })
})

const key = (c: string): string => Buffer.alloc(32, c).toString('base64url')
const good: DescriptorSet = {
  schemaVersion: 1,
  items: [
    { kind: 'service', name: 'storage.node-a', service: 'storage', node: 'node-a', endpoint: 'http://127.0.0.1:7701' },
    { kind: 'issuer-keys', issuer: 'passport.node-a', keys: [{ kty: 'OKP', crv: 'Ed25519', x: key('k'), kid: 'k1' }] },
    { kind: 'policy', name: 'default', rules: { maxTtlSec: 3600, scopes: ['storage:write'] } },
    { kind: 'signer-set', threshold: 1, signers: [{ id: 'a', publicKey: key('a') }] },
  ],
  meta: { note: 'hello' },
}

describe('descriptor sets', () => {
  it('accepts every kind and hashes canonically', () => {
    expect(descriptorSetSchema.parse(good)).toEqual(good)
    const reordered = JSON.parse(JSON.stringify({ meta: good.meta, items: good.items, schemaVersion: 1 })) as DescriptorSet
    expect(payloadB3(reordered)).toBe(payloadB3(good))
    expect(payloadB3(good)).toMatch(/^b3:[0-9a-f]{64}$/)
  })

  it('rejects unknown kinds, unknown fields, bad values and two signer sets, naming the field', () => {
    const bad: Array<[unknown, string]> = [
      [{ ...good, items: [{ kind: 'mystery', name: 'x' }] }, 'items'],
      [{ ...good, extra: 1 }, ''],
      [{ ...good, schemaVersion: 2 }, 'schemaVersion'],
      [{ ...good, items: [{ ...good.items[0], port: 1 }] }, 'items'],
      [{ ...good, items: [{ ...good.items[0], endpoint: 'ftp://x' }] }, 'items'],
      [{ ...good, items: [good.items[3], good.items[3]] }, 'items'],
      [{ ...good, items: [{ kind: 'signer-set', threshold: 2, signers: [{ id: 'a', publicKey: key('a') }, { id: 'b', publicKey: key('a') }] }] }, 'items'],
      [{ ...good, items: [{ kind: 'signer-set', threshold: 0, signers: [{ id: 'a', publicKey: key('a') }] }] }, 'items'],
      [{ ...good, items: [{ kind: 'policy', name: 'p', rules: { x: Infinity } }] }, 'items'],
    ]
    for (const [v, field] of bad) {
      const r = descriptorSetSchema.safeParse(v)
      expect(r.success, JSON.stringify(v).slice(0, 80)).toBe(false)
      if (!r.success) expect(r.error.issues[0]!.path.join('.')).toContain(field)
    }
  })
})

describe('entry bytes', () => {
  it('splicing the proposal\'s canonical payload JSON gives the canonical bytes and hash (property)', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 40 })
    fc.assert(
      fc.property(
        fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
        text,
        fc.array(fc.record({ signerId: text, sig: text }), { maxLength: 4 }),
        fc.nat({ max: 2 ** 40 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (rules, note, approvals, committedAt, version) => {
          const payload = { ...good, items: [...good.items, { kind: 'policy', name: 'p', rules: rules as Record<string, never> }], meta: { note } } as DescriptorSet
          const { json, b3 } = canonicalPayload(payload)
          expect(json).toBe(canonicalJson(payload))
          expect(b3).toBe(payloadB3(payload))
          const entry: LogEntry = { version, payload, payloadB3: b3, prev: payloadB3(good), approvals, committedAt }
          const spliced = encodeEntrySpliced(entry, json)
          const whole = encodeEntry(entry)
          expect(Buffer.from(spliced.bytes).toString('utf8')).toBe(canonicalJson(entry))
          expect(Buffer.compare(spliced.bytes, whole.bytes)).toBe(0)
          expect(spliced.hash).toBe(whole.hash)
        },
      ),
      { seed: 22, numRuns: 200 },
    )
  })
})

describe('approvals', () => {
  const subject = { origin: 'example.org/log', baseVersion: 4, payloadB3: payloadB3(good) }

  it('signs the domain-separated message; verification is bound to origin, base and payload', () => {
    expect(Buffer.from(approvalMessage(subject)).toString()).toBe(`ron:registry:v1\nexample.org/log\n4\n${subject.payloadB3}`)
    const k = generateSignerKey('alice')
    const a = signApproval(k, subject)
    expect(verifyApprovalSig(k.publicKey, a.sig, subject)).toBe(true)
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, origin: 'other.org/log' })).toBe(false)
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, baseVersion: 5 })).toBe(false)
    expect(verifyApprovalSig(generateSignerKey('x').publicKey, a.sig, subject)).toBe(false)
    expect(verifyApprovalSig(k.publicKey, 'not-a-signature', subject)).toBe(false)
    // An independent Ed25519 implementation agrees.
    expect(ed25519.verify(Buffer.from(a.sig, 'base64url'), approvalMessage(subject), Buffer.from(k.publicKey, 'base64url'))).toBe(true)
  })

  it('a remembered verdict answers only for its own key and subject, in either order', () => {
    const k = generateSignerKey('carol')
    const other = generateSignerKey('dave')
    const a = signApproval(k, subject)
    // A refusal remembered first (another base, another key) does not stick to the signature...
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, baseVersion: 9 })).toBe(false)
    expect(verifyApprovalSig(other.publicKey, a.sig, subject)).toBe(false)
    expect(verifyApprovalSig(k.publicKey, a.sig, subject)).toBe(true)
    // ...nor does an acceptance to another payload, origin or key.
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, payloadB3: payloadB3({ schemaVersion: 1, items: [] }) })).toBe(false)
    expect(verifyApprovalSig(k.publicKey, a.sig, subject)).toBe(true)
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, origin: 'example.org/log2' })).toBe(false)
    expect(verifyApprovalSig(other.publicKey, a.sig, subject)).toBe(false)
    expect(verifyApprovalSig(k.publicKey, a.sig, subject)).toBe(true)
  })

  it('counts distinct keys once and needs both thresholds for a signer-set change', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(generateSignerKey) as [ReturnType<typeof generateSignerKey>, ReturnType<typeof generateSignerKey>, ReturnType<typeof generateSignerKey>, ReturnType<typeof generateSignerKey>]
    const set = { threshold: 2, signers: [a, b, c].map((k) => ({ id: k.id, publicKey: k.publicKey })) }
    const aliasSet = { threshold: 2, signers: [...set.signers, { id: 'a2', publicKey: a.publicKey }] }
    const sa = signApproval(a, subject)
    expect(countQuorum(aliasSet, [sa, { ...sa, signerId: 'a2' }], subject)).toEqual({ have: 1, m: 2, n: 3 })
    const next = { threshold: 1, signers: [{ id: 'd', publicKey: d.publicKey }] }
    expect(evaluateQuorum(set, next, [sa, signApproval(b, subject)], subject).ok).toBe(false)
    expect(evaluateQuorum(set, next, [sa, signApproval(d, subject)], subject).ok).toBe(false)
    expect(evaluateQuorum(set, next, [sa, signApproval(b, subject), signApproval(d, subject)], subject)).toMatchObject({ ok: true, next: { have: 1, m: 1 } })
  })

  it('exports and imports signer keys', () => {
    const k = generateSignerKey('node-a')
    const back = importSignerKey(exportSignerKey(k))
    expect(back.id).toBe('node-a')
    expect(back.publicKey).toBe(k.publicKey)
    expect(verifyApprovalSig(k.publicKey, signApproval(back, subject).sig, subject)).toBe(true)
  })
})

/** A checkpoint verifier written from the C2SP spec with nothing from the package: split, base64, noble. */
function plainVerify(note: string, vkey: string): { origin: string; size: number; root: string } {
  const [name, idHex, ...rest] = vkey.split('+') as [string, string, ...string[]]
  const keyB64 = rest.join('+')
  const pub = Buffer.from(keyB64, 'base64').subarray(1)
  const at = note.lastIndexOf('\n\n')
  const text = note.slice(0, at + 1)
  const sigs = note.slice(at + 2).trimEnd().split('\n')
  const mine = sigs.find((l) => l.startsWith(`\u2014 ${name} `))
  if (mine === undefined) throw new Error('no signature by key')
  const raw = Buffer.from(mine.split(' ')[2]!, 'base64')
  if (raw.subarray(0, 4).toString('hex') !== idHex) throw new Error('key id')
  if (!ed25519.verify(raw.subarray(4), Buffer.from(text), pub)) throw new Error('bad signature')
  const [origin, size, root] = text.split('\n') as [string, string, string]
  return { origin, size: Number(size), root }
}

describe('checkpoints (C2SP signed notes)', () => {
  const signer = noteSigner('example.org/log', generateLogKey())
  const cp = { origin: 'example.org/log', treeSize: 42, rootHash: Buffer.alloc(32, 7) }

  it('verify with a plain Ed25519 verifier and a hand-written note parser', () => {
    const note = signCheckpoint(cp, signer)
    expect(note.startsWith(`example.org/log\n42\n${Buffer.alloc(32, 7).toString('base64')}\n\n\u2014 example.org/log `)).toBe(true)
    expect(plainVerify(note, signer.verifierKey)).toEqual({ origin: 'example.org/log', size: 42, root: Buffer.alloc(32, 7).toString('base64') })
    expect(verifyCheckpoint(note, signer.verifierKey)).toMatchObject({ origin: 'example.org/log', treeSize: 42 })
  })

  it('keeps cosignatures and still verifies; rejects tampering and foreign keys', () => {
    const note = signCheckpoint({ ...cp, extensions: ['ext line'] }, signer)
    const witness = noteSigner('witness.example', generateLogKey())
    const cosigned = addCosignature(note, signatureLine(witness.name, witness.keyId, new Uint8Array(72)))
    expect(parseNote(cosigned).signatures.map((s) => s.name)).toEqual(['example.org/log', 'witness.example'])
    expect(verifyCheckpoint(cosigned, signer.verifierKey).extensions).toEqual(['ext line'])
    expect(() => verifyCheckpoint(note.replace('\n42\n', '\n43\n'), signer.verifierKey)).toThrow()
    expect(() => verifyCheckpoint(note, noteSigner('example.org/log', generateLogKey()).verifierKey)).toThrow()
    expect(() => parseCheckpoint('origin\nx\nroot\n')).toThrow()
    expect(formatCheckpoint(cp)).toBe(`example.org/log\n42\n${Buffer.alloc(32, 7).toString('base64')}\n`)
  })
})
