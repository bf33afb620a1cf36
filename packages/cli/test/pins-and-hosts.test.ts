import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateIssuerKey, newNodeId } from '@ron/core'
import { CliError } from '../src/exit-codes.js'
import { adminHosts, hostNameOf } from '../src/host-check.js'
import { PinStore } from '../src/pins.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ron-pins-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('PinStore', () => {
  it('keeps pins durably (0600) across opens, forgets them, and answers by admin URL and by id', async () => {
    const file = join(dir, 'pins.json')
    const pins = await PinStore.open(file)
    const pin = { admin: 'http://10.0.0.2:7700', nodeId: newNodeId(), nodeKey: generateIssuerKey({ epoch: 1 }).publicJwk.x, pinnedAt: 1, source: 'first-contact' as const }
    await pins.pin(pin)
    if (process.platform !== 'win32') expect((await stat(file)).mode & 0o777).toBe(0o600)
    const again = await PinStore.open(file)
    expect(again.get(pin.admin)).toEqual(pin)
    expect(again.byId(pin.nodeId)).toEqual(pin)
    expect(await again.forget(pin.admin)).toBe(true)
    expect(await again.forget(pin.admin)).toBe(false)
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ version: 1, pins: [] })
  })

  it('refuses to open a damaged pins file rather than trusting every peer afresh', async () => {
    for (const [name, text] of [
      ['garbage.json', 'not json'],
      ['shape.json', '{"pins":{}}'],
      ['badid.json', JSON.stringify({ version: 1, pins: [{ admin: 'http://x', nodeId: 'storage', nodeKey: generateIssuerKey({ epoch: 1 }).publicJwk.x, pinnedAt: 1, source: 'first-contact' }] })],
      ['badkey.json', JSON.stringify({ version: 1, pins: [{ admin: 'http://x', nodeId: newNodeId(), nodeKey: 'short', pinnedAt: 1, source: 'first-contact' }] })],
    ] as const) {
      await writeFile(join(dir, name), text)
      const err = await PinStore.open(join(dir, name)).catch((e: unknown) => e)
      expect(err, name).toBeInstanceOf(CliError)
      expect((err as Error).message).toContain(join(dir, name))
    }
  })
})

describe('the admin listener’s host names', () => {
  it('parses Host headers: port, brackets, case, trailing dot; refuses what is not a host', () => {
    expect(hostNameOf('LocalHost:7700')).toBe('localhost')
    expect(hostNameOf('[::1]:7700')).toBe('::1')
    expect(hostNameOf('example.com.')).toBe('example.com')
    for (const bad of ['', 'a b', 'evil.example/x', 'user@evil.example', 'evil.example#x']) expect(hostNameOf(bad), bad).toBeUndefined()
  })

  it('allows IP literals, localhost, the bound and the advertised names; nothing else', () => {
    const ok = adminHosts('0.0.0.0', 'https://node1.example.net')
    for (const h of [undefined, '127.0.0.1:7700', '10.0.0.5', '[::1]:7700', '[fe80::1]', 'localhost', 'node1.example.net:8700', 'NODE1.example.net']) expect(ok(h), String(h)).toBe(true)
    for (const h of ['evil.example', 'node1.example.net.evil.example', 'localhost.evil.example', 'sub.node1.example.net', 'node2.example.net']) expect(ok(h), h).toBe(false)
    expect(adminHosts('my-box.lan', undefined)('my-box.lan:7700')).toBe(true)
    expect(adminHosts('::1', 'fd00::5')('[fd00::5]:7700')).toBe(true)
    expect(adminHosts('127.0.0.1', 'ron-a.internal')('ron-a.internal')).toBe(true)
  })
})
