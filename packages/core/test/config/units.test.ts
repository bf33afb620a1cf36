import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, durationSchema, parseDuration, parseSize, sizeSchema } from '../../src/config/index.js'
import { MalformedError } from '../../src/errors.js'

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['5s', 5000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    [' 5s ', 5000],
    ['0s', 0],
    [1234, 1234],
    [0, 0],
    ['5000', 5000],
    ['0', 0],
  ] as const)('%s is %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms)
  })

  it.each(['5 sec', 's', '', '-1s', '1e3s', '5S', '5 s s', 'Infinity'])('refuses %j with a ConfigError', (input) => {
    expect(() => parseDuration(input)).toThrow(ConfigError)
  })

  it('refuses negative, non-finite and NaN numbers', () => {
    for (const n of [-1, Infinity, NaN]) expect(() => parseDuration(n)).toThrow(ConfigError)
  })
})

describe('parseSize', () => {
  it.each([
    ['64KiB', 65_536],
    ['1MiB', 1_048_576],
    ['10MB', 10_000_000],
    ['512', 512],
    ['512B', 512],
    ['1.5KiB', 1536],
    ['2 gib', 2 * 1024 ** 3],
    ['1TB', 1e12],
    [4096, 4096],
  ] as const)('%s is %d bytes', (input, bytes) => {
    expect(parseSize(input)).toBe(bytes)
  })

  it.each(['lots', '', '-1', '1.5', '0.3B', '1 KiBs', '1e6', '64K', 'MiB'])('refuses %j with a ConfigError', (input) => {
    expect(() => parseSize(input)).toThrow(ConfigError)
  })

  it('refuses fractional, negative and unsafe numbers', () => {
    for (const n of [1.5, -1, 2 ** 60, NaN]) expect(() => parseSize(n)).toThrow(ConfigError)
  })

  it('ConfigError is a Malformed error with expected and got in details', () => {
    try {
      parseSize('lots')
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(MalformedError)
      expect((e as ConfigError).code).toBe('Malformed')
      expect((e as ConfigError).name).toBe('ConfigError')
      expect((e as ConfigError).details).toMatchObject({ expected: 'size', got: '"lots"' })
    }
  })
})

describe('durationSchema and sizeSchema', () => {
  const schema = z.strictObject({ timeout: durationSchema.prefault('5s'), max: sizeSchema.prefault('64KiB') })

  it('accept both forms and output numbers', () => {
    expect(schema.parse({ timeout: '250ms', max: 10 })).toEqual({ timeout: 250, max: 10 })
    expect(schema.parse({})).toEqual({ timeout: 5000, max: 65_536 })
  })

  it('report a readable issue for bad values', () => {
    const r = schema.safeParse({ timeout: 'soon', max: true })
    expect(r.success).toBe(false)
    const msgs = r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
    expect(msgs).toContain('timeout: expected a duration like "250ms", "5s", "1m", "2h" or milliseconds')
    expect(msgs.some((m) => m.startsWith('max: expected a size like "64MiB"'))).toBe(true)
  })
})
