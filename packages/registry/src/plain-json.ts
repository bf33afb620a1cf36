/**
 * RFC 8785 canonical JSON of the registry's common values, written directly: a plain service
 * descriptor set and an entry's approvals. Core's `canonicalJson` walks any value (sorting the
 * keys of every object, building a path string for every member, joining an array of pieces):
 * per commit cycle that is most of the ~90k instructions and ~3 KiB of garbage the proposal's
 * payload and the entry's members cost. These writers recognise the common shape and return
 * `undefined` for anything else, which the caller then hands to `canonicalJson`: the bytes are the
 * same either way (a property test in `test/plain-json.test.ts` pins it).
 *
 * Strings are written with `JSON.stringify` only when they are printable ASCII: RFC 8785's string
 * form is ECMAScript's `JSON.stringify`, and printable ASCII has no lone surrogate (which core's
 * writer refuses) and nothing to escape but `"` and `\`.
 *
 * @module
 */

import type { DescriptorSet } from './descriptors.js'
import { plainMembers } from './plain.js'
import type { Approval } from './signers.js'

/**
 * Canonical JSON of a printable-ASCII string, or `undefined` for any other value. One pass over
 * the characters: a string with neither `"` nor `\` is quoted as it is (what `JSON.stringify`
 * gives it), one with either goes through `JSON.stringify`. A regular expression and
 * `JSON.stringify` per string cost ~2k instructions each; a commit cycle writes ~15 strings.
 * @internal
 */
export function plainStringJson(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  let escaped = false
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i)
    if (c < 0x20 || c > 0x7e) return undefined
    if (c === 0x22 || c === 0x5c) escaped = true
  }
  return escaped ? JSON.stringify(v) : '"' + v + '"'
}

const SET_KEYS = ['schemaVersion', 'items'] as const
const ITEM_KEYS = ['kind', 'name', 'service', 'node', 'endpoint', 'ttlSec'] as const
const APPROVAL_KEYS = ['signerId', 'sig'] as const

/**
 * Canonical JSON of `{schemaVersion: 1, items: [service descriptors]}` (each item
 * `{kind: 'service', name, service, node, endpoint, ttlSec?}` of printable-ASCII strings and a
 * safe-integer `ttlSec`); `undefined` for any other set. @internal
 */
export function plainSetJson(set: DescriptorSet): string | undefined {
  if (plainMembers(set, SET_KEYS) !== 2 || set.schemaVersion !== 1) return undefined
  const items: unknown = set.items
  if (!Array.isArray(items)) return undefined
  let out = '{"items":['
  for (let i = 0; i < items.length; i++) {
    const d = items[i] as Record<string, unknown>
    const n = plainMembers(d, ITEM_KEYS)
    if ((n !== 5 && n !== 6) || d['kind'] !== 'service') return undefined
    // Members in RFC 8785 order: endpoint, kind, name, node, service, ttlSec.
    const endpoint = plainStringJson(d['endpoint'])
    const name = plainStringJson(d['name'])
    const node = plainStringJson(d['node'])
    const service = plainStringJson(d['service'])
    if (endpoint === undefined || name === undefined || node === undefined || service === undefined) return undefined
    const ttl = d['ttlSec']
    let tail = '}'
    if (n === 6) {
      if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl)) return undefined
      tail = `,"ttlSec":${Object.is(ttl, -0) ? 0 : ttl}}`
    } else if ('ttlSec' in d) return undefined
    out += `${i > 0 ? ',' : ''}{"endpoint":${endpoint},"kind":"service","name":${name},"node":${node},"service":${service}${tail}`
  }
  return `${out}],"schemaVersion":1}`
}

/**
 * Canonical JSON of an entry's approvals (each exactly `{signerId, sig}` of printable-ASCII
 * strings); `undefined` for anything else. @internal
 */
export function plainApprovalsJson(approvals: readonly Approval[]): string | undefined {
  let out = '['
  for (let i = 0; i < approvals.length; i++) {
    const a = approvals[i]!
    if (plainMembers(a, APPROVAL_KEYS) !== 2) return undefined
    const sig = plainStringJson(a.sig)
    const signerId = plainStringJson(a.signerId)
    if (sig === undefined || signerId === undefined) return undefined
    out += `${i > 0 ? ',' : ''}{"sig":${sig},"signerId":${signerId}}`
  }
  return `${out}]`
}

/** Canonical JSON of a safe integer, or `undefined`. @internal */
export function plainIntJson(v: unknown): string | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) ? String(Object.is(v, -0) ? 0 : v) : undefined
}
