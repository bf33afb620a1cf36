import { describe, expect, it } from 'vitest'
import { ReplyCache } from '../src/routes/reply-cache.js'

describe('ReplyCache', () => {
  it('evicts the least recently used first, counting repeated hits on the newest and hits on older entries alike', () => {
    // Room for 4 entries of 10 bytes (one of over a quarter of the bound is not kept).
    const c = new ReplyCache<string>(40)
    for (const k of ['a', 'b', 'c', 'd']) c.set(k, k.toUpperCase(), 10)
    // Repeated hits on the newest move nothing; a hit on an older one makes it the newest.
    expect([c.get('d'), c.get('d'), c.get('a'), c.get('a'), c.get('b')]).toEqual(['D', 'D', 'A', 'A', 'B'])
    // Order now (oldest first): c, d, a, b.
    c.set('e', 'E', 10)
    expect(c.get('c')).toBeUndefined()
    c.set('f', 'F', 10)
    expect(c.get('d')).toBeUndefined()
    // Replacing an entry makes it the newest, with its new size.
    c.set('a', 'A2', 10)
    c.set('g', 'G', 10)
    expect([c.get('b'), c.get('e'), c.get('f'), c.get('a'), c.get('g')]).toEqual([undefined, 'E', 'F', 'A2', 'G'])
    c.set('big', 'X', 11)
    expect(c.get('big')).toBeUndefined()
    expect(c.get('e')).toBe('E')
  })
})
