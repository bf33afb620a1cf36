import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, configFromEnv, durationSchema, loadConfig, sizeSchema, validateConfig } from '../../src/config/index.js'

const schema = z.strictObject({
  name: z.string().default('node'),
  port: z.number().int().default(8080),
  storage: z
    .strictObject({
      maxObjectBytes: sizeSchema.prefault('64MiB'),
      readTimeout: durationSchema.prefault('5s'),
      durable: z.boolean().default(true),
      peers: z.array(z.string()).default([]),
    })
    .prefault({}),
  auth: z.strictObject({ adminToken: z.string().optional() }).prefault({}),
})

const dir = mkdtempSync(join(tmpdir(), 'ron-config-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
function file(name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error('expected a ConfigError')
}

describe('loadConfig', () => {
  it('validates without generating code (zod JIT off: a config is parsed once, compiling its parsers cost a start ~150 ms)', () => {
    // zod builds its fast path with `new Function`; count those constructions while validating.
    const real = globalThis.Function
    let compiled = 0
    globalThis.Function = new Proxy(real, {
      construct(target, args: string[]) {
        compiled++
        return Reflect.construct(target, args)
      },
    })
    const fresh = (): z.ZodType => z.strictObject({ a: z.strictObject({ b: z.string().default('x'), c: durationSchema.prefault('1s') }).prefault({}) })
    try {
      expect(validateConfig(fresh(), { a: { b: 'y' } })).toEqual({ a: { b: 'y', c: 1000 } })
      expect(loadConfig(fresh(), { env: {} })).toEqual({ a: { b: 'x', c: 1000 } })
      expect(compiled).toBe(0)
      // The count sees zod's JIT when it runs (not a vacuous pass).
      expect(fresh().safeParse({ a: {} }).success).toBe(true)
      expect(compiled).toBeGreaterThan(0)
    } finally {
      globalThis.Function = real
    }
  })

  it('applies schema defaults when nothing is given', () => {
    expect(loadConfig(schema, { env: {} })).toEqual({
      name: 'node',
      port: 8080,
      storage: { maxObjectBytes: 64 * 1024 * 1024, readTimeout: 5000, durable: true, peers: [] },
      auth: {},
    })
  })

  it('layers defaults < file < environment < overrides', () => {
    const f = file('layers.json', JSON.stringify({ name: 'from-file', port: 1, storage: { readTimeout: '1s', durable: false } }))
    const cfg = loadConfig(schema, {
      defaults: { name: 'from-defaults', port: 0, storage: { maxObjectBytes: '1KiB' } },
      file: f,
      env: { RON_PORT: '2', RON_STORAGE__READ_TIMEOUT: '2s' },
      overrides: { storage: { readTimeout: 3000 }, name: undefined },
    })
    expect(cfg).toEqual({
      name: 'from-file',
      port: 2,
      storage: { maxObjectBytes: 1024, readTimeout: 3000, durable: false, peers: [] },
      auth: {},
    })
  })

  it('reads TOML files by extension', () => {
    const f = file('ron.toml', 'name = "toml"\n[storage]\nmaxObjectBytes = "10MB"\npeers = ["a", "b"]\n')
    const cfg = loadConfig(schema, { file: f, env: {} })
    expect(cfg.name).toBe('toml')
    expect(cfg.storage).toMatchObject({ maxObjectBytes: 10_000_000, peers: ['a', 'b'] })
  })

  it('maps RON_A__B_C to a.bC and coerces to the schema type', () => {
    const env = {
      RON_STORAGE__MAX_OBJECT_BYTES: '1MiB',
      RON_STORAGE__DURABLE: 'false',
      RON_STORAGE__PEERS: 'http://a, http://b',
      RON_PORT: '9000',
      RON_AUTH__ADMIN_TOKEN: '12345',
      RON_NAME: '42',
    }
    const cfg = loadConfig(schema, { env })
    expect(cfg).toMatchObject({ name: '42', port: 9000, storage: { maxObjectBytes: 1_048_576, durable: false, peers: ['http://a', 'http://b'] }, auth: { adminToken: '12345' } })
    expect(configFromEnv(schema, { RON_STORAGE__PEERS: '["x"]' })).toEqual({ storage: { peers: ['x'] } })
  })

  it('ignores environment variables that name no key, and those without the prefix', () => {
    const cfg = loadConfig(schema, { env: { RON_BLAKE3_BACKEND: 'noble', RON_STORAGE__NOPE: '1', PORT: '1', RON_: 'x', RON___X: 'y' } })
    expect(cfg.port).toBe(8080)
  })

  it('treats an empty variable as unset and a bare number as milliseconds for durations', () => {
    const cfg = loadConfig(schema, { env: { RON_PORT: '', RON_NAME: '', RON_STORAGE__READ_TIMEOUT: '2500' } })
    expect(cfg.port).toBe(8080)
    expect(cfg.name).toBe('node')
    expect(cfg.storage.readTimeout).toBe(2500)
  })

  it('honours a custom env prefix', () => {
    expect(loadConfig(schema, { env: { APP_PORT: '7', RON_PORT: '8' }, envPrefix: 'APP_' }).port).toBe(7)
  })

  it('names the key path and the expected type in errors', () => {
    const e = configError(() => loadConfig(schema, { env: { RON_STORAGE__MAX_OBJECT_BYTES: 'lots' } }))
    expect(e.message).toMatch(/^storage\.maxObjectBytes: expected a size like "64MiB".*, got "lots"$/)
    expect(e.details).toMatchObject({ path: 'storage.maxObjectBytes', got: '"lots"' })
    expect(e.code).toBe('Malformed')

    const t = configError(() => loadConfig(schema, { env: { RON_PORT: 'eighty' } }))
    expect(t.message).toBe('port: expected number, got "eighty"')
    expect(t.details).toMatchObject({ path: 'port', expected: 'number' })
  })

  it('rejects unknown keys from files and overrides (strict)', () => {
    const f = file('unknown.json', JSON.stringify({ storage: { maxObjectBytez: 1 } }))
    expect(configError(() => loadConfig(schema, { file: f, env: {} })).message).toBe('storage.maxObjectBytez: unknown key')
    expect(configError(() => loadConfig(schema, { env: {}, overrides: { extra: 1 } })).message).toBe('extra: unknown key')
  })

  it('lists several problems in one error', () => {
    const e = configError(() => loadConfig(schema, { env: {}, overrides: { port: 'x', name: 5, storage: { readTimeout: 'later' } } }))
    expect(e.details['issues']).toHaveLength(3)
    expect(e.message).toContain('name: expected string, got 5')
    expect(e.message).toContain('storage.readTimeout: expected a duration')
  })

  it('reports unreadable and unparsable files as ConfigError naming the file', () => {
    expect(configError(() => loadConfig(schema, { file: join(dir, 'missing.json'), env: {} })).message).toContain('missing.json')
    expect(configError(() => loadConfig(schema, { file: file('bad.json', '{nope'), env: {} })).message).toMatch(/not valid JSON/)
    expect(configError(() => loadConfig(schema, { file: file('bad.toml', 'x = = 1'), env: {} })).message).toMatch(/not valid TOML/)
    expect(configError(() => loadConfig(schema, { file: file('arr.json', '[1]'), env: {} })).message).toMatch(/must hold an object/)
  })

  it('does not let a file pollute Object.prototype', () => {
    const f = file('proto.json', '{"__proto__": {"polluted": true}, "name": "x"}')
    expect(loadConfig(schema, { file: f, env: {} }).name).toBe('x')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })

  it('reads process.env when no env is given', () => {
    process.env['RON_PORT'] = '4321'
    try {
      expect(loadConfig(schema).port).toBe(4321)
    } finally {
      delete process.env['RON_PORT']
    }
  })
})
