/**
 * `GET /names?prefix=&cursor=&limit=` (public, like resolve; SPEC §6a "Listing names"): the names
 * homed on this node, in name order, each with the record this node signed for it.
 *
 * @module
 */

import { MalformedError, isValidName } from '@ron/core'
import type { Route } from '@ron/core'
import type { SignedNameRecord } from '../name-record.js'
import { CHANNELS, ROUTES } from '../topology.js'
import type { IndexContext } from './context.js'

/** Default `limit` of `GET /names`. */
export const DEFAULT_NAME_LIMIT = 100
/** Largest `limit` of `GET /names`. */
export const MAX_NAME_LIMIT = 1000

/** One page of `GET /names`. */
export interface NameList {
  /** The names of the page, each as the record its home (this node) signed. */
  names: SignedNameRecord[]
  /** Pass as `cursor` for the next page; `null` on the last page. */
  cursor: string | null
}

const PREFIX_RE = /^[a-z0-9.-]{0,253}$/

function parseListQuery(q: URLSearchParams): { prefix: string; cursor: string | undefined; limit: number } {
  const prefix = q.get('prefix') ?? ''
  if (!PREFIX_RE.test(prefix)) throw new MalformedError('prefix must be the start of a name: [a-z0-9.-], at most 253 characters', { details: { field: 'prefix' } })
  const rawCursor = q.get('cursor')
  const cursor = rawCursor === null || rawCursor === '' ? undefined : rawCursor
  if (cursor !== undefined && !isValidName(cursor)) throw new MalformedError('cursor must be a name (the cursor of the previous page)', { details: { field: 'cursor' } })
  const rawLimit = q.get('limit')
  const limit = rawLimit === null ? DEFAULT_NAME_LIMIT : /^[0-9]{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_NAME_LIMIT) {
    throw new MalformedError(`limit must be an integer from 1 to ${MAX_NAME_LIMIT}`, { details: { field: 'limit', value: (rawLimit ?? '').slice(0, 16) } })
  }
  return { prefix, cursor, limit }
}

/** The listing route. */
export function nameListRoutes(s: IndexContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/names',
      name: ROUTES.nameList,
      queue: CHANNELS.work,
      handler: (ctx) => {
        const { prefix, cursor, limit } = parseListQuery(ctx.query)
        // One more than asked: it says whether another page follows.
        const rows = s.store.list(prefix, cursor, limit + 1)
        const page = rows.slice(0, limit)
        const names = page.map(([name, b]) => s.recordOf(name, b))
        const next = rows.length > limit ? (page[page.length - 1]?.[0] ?? null) : null
        const body: NameList = { names, cursor: next }
        return { status: 200, json: body }
      },
    },
  ]
}
