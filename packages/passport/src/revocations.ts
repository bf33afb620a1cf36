/**
 * The revocation log (single writer: the revocation worker) and the token tree (parent → children
 * of attenuated tokens), so that revoking a token revokes its whole subtree. The log is the
 * feed every verifier follows (`GET /v1/passport/revocations?since=`); with a data directory both
 * are appended to JSON-lines files and replayed on start.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { appendFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { RevocationSet, type Clock, type RevocationFeedItem, type RevocationFeedPage } from '@ron/core'
import { writeFileAtomic } from './file-keystore.js'

interface TreeNode {
  exp: number
  children: Set<string>
}

/** Seconds a revocation or tree entry outlives its token's `exp`. */
const GRACE_SEC = 120
/** Revocations of tokens whose exp passport does not know are kept this long (the admin token's life). */
const UNKNOWN_EXP_SEC = 31 * 24 * 3600

async function readLines(path: string): Promise<unknown[]> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw e
  }
  const out: unknown[] = []
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    try {
      out.push(JSON.parse(line))
    } catch {
      // A torn last line after a crash: everything before it is intact.
    }
  }
  return out
}

/** Revocations and the token tree. @internal */
export class RevocationLog {
  readonly feedId: string
  readonly set: RevocationSet
  #items: RevocationFeedItem[] = []
  #bySeq = new Map<string, number>()
  readonly #tree = new Map<string, TreeNode>()
  readonly #clock: Clock
  readonly #dir: string | undefined
  #seq = 0

  private constructor(clock: Clock, dir: string | undefined, feedId: string) {
    this.#clock = clock
    this.#dir = dir
    this.feedId = feedId
    this.set = new RevocationSet({ clock, graceSec: GRACE_SEC, capacity: 1_000_000 })
  }

  /** Opens the log (replaying `dir` when given). */
  static async open(clock: Clock, dir: string | undefined): Promise<RevocationLog> {
    if (dir === undefined) return new RevocationLog(clock, undefined, randomBytes(8).toString('hex'))
    const lines = await readLines(join(dir, 'revocations.jsonl'))
    const head = lines[0] as { feedId?: unknown } | undefined
    const feedId = typeof head?.feedId === 'string' ? head.feedId : randomBytes(8).toString('hex')
    const log = new RevocationLog(clock, dir, feedId)
    const nowSec = clock.now() / 1000
    const live = (exp: unknown): boolean => typeof exp !== 'number' || exp + GRACE_SEC >= nowSec
    let dropped = 0
    for (const l of lines.slice(1)) {
      const it = l as RevocationFeedItem
      if (typeof it.jti !== 'string' || typeof it.seq !== 'number') continue
      if (live(it.exp)) log.#apply(it)
      else {
        // Long expired: no verifier needs it; keep the seq so the feed never goes backwards.
        log.#seq = Math.max(log.#seq, it.seq)
        dropped++
      }
    }
    const tree: Array<{ jti: string; prf: string; exp: number }> = []
    for (const l of await readLines(join(dir, 'tree.jsonl'))) {
      const t = l as { jti?: unknown; prf?: unknown; exp?: unknown }
      if (typeof t.jti === 'string' && typeof t.prf === 'string' && typeof t.exp === 'number' && live(t.exp)) {
        log.#link(t.jti, t.prf, t.exp)
        tree.push({ jti: t.jti, prf: t.prf, exp: t.exp })
      }
    }
    // Compaction on start: rewrite both files without what has expired (atomically, 0600).
    const header = { feedId, ...(log.#items.length === 0 ? { seq: log.#seq } : {}) }
    if (dropped > 0 || typeof head?.feedId !== 'string') {
      await writeFileAtomic(join(dir, 'revocations.jsonl'), [header, ...log.#items].map((x) => `${JSON.stringify(x)}\n`).join(''), dir)
      await writeFileAtomic(join(dir, 'tree.jsonl'), tree.map((x) => `${JSON.stringify(x)}\n`).join(''), dir)
    }
    const seqFloor = (head as { seq?: unknown } | undefined)?.seq
    if (typeof seqFloor === 'number') log.#seq = Math.max(log.#seq, seqFloor)
    return log
  }

  /** The last seq written. */
  get seq(): number {
    return this.#seq
  }

  /** True when `jti` is revoked. */
  isRevoked(jti: string): boolean {
    return this.set.isRevoked(jti)
  }

  /** Records that `child` was attenuated from `parent`. */
  async link(child: string, parent: string, exp: number): Promise<void> {
    this.#link(child, parent, exp)
    if (this.#dir !== undefined) await appendFile(join(this.#dir, 'tree.jsonl'), `${JSON.stringify({ jti: child, prf: parent, exp })}\n`, { mode: 0o600 })
  }

  /** Records a token's exp (so a revocation by jti knows how long to keep the entry). */
  noteIssued(jti: string, exp: number): void {
    if (!this.#tree.has(jti)) this.#tree.set(jti, { exp, children: new Set() })
  }

  /**
   * Revokes `jti` and every token attenuated from it (children, grandchildren…). Already revoked
   * ids keep their seq. Returns the items written and the last seq. Single writer: only the
   * revocation worker calls this.
   */
  async revoke(jti: string, exp?: number): Promise<{ seq: number; revoked: string[] }> {
    const now = this.#clock.now()
    const written: RevocationFeedItem[] = []
    const revoked: string[] = []
    const queue = [jti]
    const seen = new Set<string>()
    while (queue.length > 0) {
      const id = queue.shift()!
      if (seen.has(id)) continue
      seen.add(id)
      revoked.push(id)
      const node = this.#tree.get(id)
      if (node !== undefined) queue.push(...node.children)
      if (this.#bySeq.has(id) && this.set.isRevoked(id)) continue
      const e = id === jti && exp !== undefined ? exp : (node?.exp ?? Math.floor(now / 1000) + UNKNOWN_EXP_SEC)
      const item: RevocationFeedItem = { seq: this.#seq + 1, jti: id, exp: e, revokedAt: now }
      this.#apply(item)
      written.push(item)
    }
    if (written.length > 0 && this.#dir !== undefined) {
      await appendFile(join(this.#dir, 'revocations.jsonl'), written.map((i) => `${JSON.stringify(i)}\n`).join(''), { mode: 0o600 })
    }
    // The seq that covers the whole subtree: a follower synced past it refuses every id in it.
    let seq = 0
    for (const id of revoked) seq = Math.max(seq, this.#bySeq.get(id) ?? 0)
    return { seq, revoked }
  }

  /** A page of the feed after `since`. */
  page(since: number, limit: number): RevocationFeedPage {
    const items = this.#items
    // Items are in seq order: binary search for the first seq > since.
    let lo = 0
    let hi = items.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (items[mid]!.seq <= since) lo = mid + 1
      else hi = mid
    }
    const nowSec = this.#clock.now() / 1000
    const out: RevocationFeedItem[] = []
    let i = lo
    for (; i < items.length && out.length < limit; i++) {
      const it = items[i]!
      // Long-expired revocations are history no verifier needs.
      if (it.exp !== undefined && it.exp + GRACE_SEC < nowSec) continue
      out.push(it)
    }
    const more = i < items.length
    const seq = more ? items[i - 1]!.seq : Math.max(since, this.#seq)
    return { feedId: this.feedId, seq, items: out, more }
  }

  /** The items after `since` (SSE replay). */
  since(since: number): RevocationFeedItem[] {
    return this.#items.filter((i) => i.seq > since)
  }

  /** Drops tree nodes and feed items of long-expired tokens (the feed's seq never goes back). Returns how many nodes. */
  prune(): number {
    const nowSec = this.#clock.now() / 1000
    const before = this.#items.length
    this.#items = this.#items.filter((it) => it.exp === undefined || it.exp + GRACE_SEC >= nowSec)
    if (this.#items.length !== before) this.#bySeq = new Map(this.#items.map((it) => [it.jti, it.seq]))
    let n = 0
    for (const [jti, node] of this.#tree) {
      if (node.exp + GRACE_SEC < nowSec) {
        this.#tree.delete(jti)
        n++
      }
    }
    this.set.purge()
    return n
  }

  #apply(item: RevocationFeedItem): void {
    this.#items.push(item)
    this.#bySeq.set(item.jti, item.seq)
    this.#seq = Math.max(this.#seq, item.seq)
    this.set.add(item.jti, item.exp)
  }

  #link(child: string, parent: string, exp: number): void {
    let p = this.#tree.get(parent)
    if (p === undefined) {
      // Parent exp ≥ child exp; unknown parents (tokens not issued here) are kept as long as the child.
      p = { exp, children: new Set() }
      this.#tree.set(parent, p)
    }
    p.children.add(child)
    const c = this.#tree.get(child)
    if (c === undefined) this.#tree.set(child, { exp, children: new Set() })
  }
}
