import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  MAX_DIR_ENTRIES,
  MAX_MANIFEST_BYTES,
  addressOf,
  compareEntryPaths,
  dirManifest,
  dirManifestSchema,
  gatewayLabel,
  isDirManifest,
  isEntryPath,
  isRonError,
  isValidName,
  manifestSchema,
  mediaTypeFor,
  mediaTypeTable,
  nameFromGatewayLabel,
  parseManifest,
  type DirEntry,
} from '@ron/core'

const A = `b3:${'a'.repeat(64)}` as const
const entry = (path: string, type = 'text/plain'): DirEntry => ({ path, content: A, size: 1, type })

describe('directory manifests (SPEC §6a)', () => {
  it('accept relative, normalised, unique, sorted paths; a file manifest keeps its shape with kind optional', () => {
    const m = { kind: 'dir', entries: [entry('css/site.css'), entry('img/logo.png'), entry('index.html')] }
    expect(dirManifestSchema.parse(m)).toEqual(m)
    expect(isDirManifest(parseManifest(m))).toBe(true)
    const file = { content: A, size: 3, type: 'text/plain' }
    expect(parseManifest(file)).toEqual(file)
    expect(parseManifest({ kind: 'file', ...file })).toEqual({ kind: 'file', ...file })
    expect(manifestSchema.safeParse({ kind: 'dir', ...file }).success).toBe(false)
  })

  it('refuse paths that climb, are absolute, not normalised or carry control characters, naming the entry', () => {
    for (const bad of ['../x', 'a/../b', '/abs', 'a//b', './a', 'a/.', 'dir/', '', 'a\\b', 'a\u0000b', 'a\nb', '\ud800', 'x'.repeat(1025), `${'y'.repeat(256)}/z`]) {
      expect(isEntryPath(bad), JSON.stringify(bad)).toBe(false)
      const err = (() => {
        try {
          parseManifest({ kind: 'dir', entries: [entry(bad)] })
        } catch (e) {
          return e
        }
        return undefined
      })()
      expect(isRonError(err, 'Malformed')).toBe(true)
      expect((err as { details: { field: string } }).details.field).toBe('entries.0.path')
    }
    for (const good of ['a', 'a b/c.d', 'é/日本.html', '..a', 'a..', '.well-known/x', '😀.txt']) expect(isEntryPath(good), good).toBe(true)
  })

  it('refuse duplicates, unsorted entries, a file that is also a directory, unknown fields and too many entries', () => {
    const bad = (entries: unknown[], more: Record<string, unknown> = {}): boolean => dirManifestSchema.safeParse({ kind: 'dir', entries, ...more }).success
    expect(bad([entry('a'), entry('a')])).toBe(false)
    expect(bad([entry('b'), entry('a')])).toBe(false)
    expect(bad([entry('a'), entry('a-b'), entry('a/b')])).toBe(false)
    expect(bad([{ ...entry('a'), extra: 1 }])).toBe(false)
    expect(bad([entry('a')], { extra: 1 })).toBe(false)
    expect(bad([{ ...entry('a'), size: -1 }])).toBe(false)
    expect(bad([{ ...entry('a'), type: 'nonsense' }])).toBe(false)
    expect(bad([])).toBe(true)
    const many = Array.from({ length: MAX_DIR_ENTRIES + 1 }, (_, i) => entry(`f${String(i).padStart(6, '0')}`))
    expect(bad(many)).toBe(false)
    expect(bad(many.slice(0, MAX_DIR_ENTRIES))).toBe(true)
  })

  it('dirManifest sorts by code point, makes the same bytes for the same files in any order, and caps the size', () => {
    const files = [entry('z.txt'), entry('\uffff.txt'), entry('😀.txt'), entry('A.txt'), entry('a/b.txt')]
    const one = dirManifest(files)
    const two = dirManifest([...files].reverse())
    expect(Buffer.from(one.bytes).equals(Buffer.from(two.bytes))).toBe(true)
    expect(addressOf(one.bytes)).toBe(addressOf(two.bytes))
    // UTF-8 byte order: U+FFFF (EF BF BF) sorts before U+1F600 (F0 9F 98 80), unlike UTF-16 code units.
    expect(one.manifest.entries.map((e) => e.path)).toEqual(['A.txt', 'a/b.txt', 'z.txt', '\uffff.txt', '😀.txt'])
    expect(JSON.parse(new TextDecoder().decode(one.bytes))).toEqual(one.manifest)
    const long = Array.from({ length: 9000 }, (_, i) => entry(`${'d'.repeat(200)}/${i}`))
    expect(() => dirManifest(long)).toThrow(expect.objectContaining({ code: 'OverLimit', details: { limit: MAX_MANIFEST_BYTES, size: expect.any(Number) } }))
    expect(() => dirManifest([entry('a'), entry('a')])).toThrow(expect.objectContaining({ code: 'Malformed' }))
  })

  it('compareEntryPaths agrees with UTF-8 byte order (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(Math.sign(compareEntryPaths(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))))
      }),
    )
  })
})

describe('media types from file names', () => {
  it('knows the web types, ignores case, and falls back to application/octet-stream', () => {
    expect(mediaTypeFor('index.html')).toBe('text/html; charset=utf-8')
    expect(mediaTypeFor('css/site.CSS')).toBe('text/css; charset=utf-8')
    expect(mediaTypeFor('app.mjs')).toBe('text/javascript; charset=utf-8')
    expect(mediaTypeFor('img/logo.png')).toBe('image/png')
    expect(mediaTypeFor('a.svg')).toBe('image/svg+xml')
    expect(mediaTypeFor('LICENSE')).toBe('application/octet-stream')
    expect(mediaTypeFor('.htaccess')).toBe('application/octet-stream')
    expect(mediaTypeFor('dir.html/file')).toBe('application/octet-stream')
  })

  it('lists its table for pages that type files themselves, the same answers as mediaTypeFor', () => {
    const table = mediaTypeTable()
    expect(table['css']).toBe('text/css; charset=utf-8')
    for (const [ext, type] of Object.entries(table)) expect(mediaTypeFor(`a.${ext.toUpperCase()}`)).toBe(type)
    // A copy: changing it changes nothing.
    table['css'] = 'x/y'
    expect(mediaTypeFor('a.css')).toBe('text/css; charset=utf-8')
  })
})

describe('gateway labels (a name inlined into one DNS label)', () => {
  it('doubles "-" then turns "." into "-", and reverses exactly', () => {
    expect(gatewayLabel('docs.alice')).toBe('docs-alice')
    expect(gatewayLabel('my-site.alice')).toBe('my--site-alice')
    expect(gatewayLabel('xn--bcher-kva.example')).toBe('xn----bcher--kva-example')
    expect(nameFromGatewayLabel('my--site-alice')).toBe('my-site.alice')
    expect(nameFromGatewayLabel('xn----bcher--kva-example')).toBe('xn--bcher-kva.example')
  })

  it('has no label for an invalid name or one whose label passes 63 characters', () => {
    expect(gatewayLabel('Docs')).toBeUndefined()
    expect(gatewayLabel(`${'a'.repeat(30)}.${'b'.repeat(32)}`)).toBe(`${'a'.repeat(30)}-${'b'.repeat(32)}`)
    expect(gatewayLabel(`${'a'.repeat(30)}.${'b'.repeat(33)}`)).toBeUndefined()
    expect(gatewayLabel('a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t-u-v-w-x-y-z')).toBeUndefined()
  })

  it('refuses labels that are not the canonical label of a valid name', () => {
    for (const bad of ['', 'Docs-alice', 'a---b', '-a', 'a-', 'a_b', 'x'.repeat(64)]) expect(nameFromGatewayLabel(bad), bad).toBeUndefined()
  })

  it('round-trips every valid name that has a label (property)', () => {
    const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/)
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 4 }), (labels) => {
        const name = labels.join('.')
        if (!isValidName(name)) return
        const l = gatewayLabel(name)
        if (l === undefined) return
        expect(/^[a-z0-9-]{1,63}$/.test(l)).toBe(true)
        expect(nameFromGatewayLabel(l)).toBe(name)
      }),
    )
  })
})
