/**
 * The revocation log (single writer: the revocation worker) and the token tree (each token
 * passport minted from a token, under its parent: attenuations and issues alike), so that revoking
 * a token revokes its whole subtree, and retiring one (the admin token replaced) does not.
 *
 * Durability (SPEC.md §4, "nothing is acknowledged before it is durable"): a revocation is applied
 * to the in-memory set and published only after its feed items are on disk (fdatasync), and a
 * minted token is handed out only after its parent link is. With a data directory both live in
 * JSON-lines files (`revocations.jsonl`, `tree.jsonl`), replayed on start and compacted as entries
 * expire.
 *
 * Race-freedom against a mint in flight: a revocation marks every id of the subtree it is about
 * to write as *pending* (synchronously, in the same turn it walks the tree); a mint adopts its
 * child under the parent synchronously, refusing a parent that is revoked or pending. So either
 * the child was adopted first — the revocation's walk finds it and writes it too — or the parent
 * was already pending or revoked, and the mint is refused. After signing, a mint re-checks its own
 * id: a child caught by a revocation while it was signed is never handed out.
 *
 * In a cluster (a {@link PassportClusterStore}, SPEC §6c) revocations and links are stored there
 * instead of in the files, and the other nodes' ones arrive through its watch; the store refuses
 * a link under a parent revoked anywhere, and revokes the subtree level by level, so a mint on
 * another node racing a revocation is covered or refused as it is here.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { RevocationSet, UnauthorizedError, type Clock, type RevocationCheck, type RevocationFeedItem, type RevocationFeedPage } from '@ron/core'
import type { ClusterRevocation, PassportClusterState, PassportClusterStore } from './cluster-store.js'
import { JsonlFile, type WriteObserver } from './jsonl-file.js'

interface TreeNode {
  exp: number
  children: Set<string>
}

/** A revocation feed item as passport writes it: `cascade` always present. */
export type FeedItem = RevocationFeedItem & { cascade: boolean; exp: number }

/** A parent link as `tree.jsonl` stores it. */
interface Link {
  jti: string
  prf: string
  exp: number
}

/** Seconds a revocation or tree entry outlives its token's `exp`. */
const GRACE_SEC = 120
/** Revocations of tokens whose exp passport does not know are kept this long (the admin token's life). */
const UNKNOWN_EXP_SEC = 31 * 24 * 3600
/** Compact a file when it holds this many more lines than are live (and at least twice as many). */
const COMPACT_SLACK = 1024

/** What {@link RevocationLog.revoke} did. */
export interface RevokeOutcome {
  /** The feed seq covering the request (a follower synced past it refuses every id of it). */
  seq: number
  /** Every id the request covers (the token, and with cascade its subtree). */
  revoked: string[]
  /** The items written now (ids already covered keep their earlier item). */
  written: FeedItem[]
}

/** Revocations and the token tree. @internal */
export class RevocationLog implements RevocationCheck {
  readonly feedId: string
  readonly set: RevocationSet
  #items: FeedItem[] = []
  /** The latest item of each id. */
  #latest = new Map<string, FeedItem>()
  readonly #tree = new Map<string, TreeNode>()
  /** Ids a revocation in flight is writing: nothing more is minted from them. */
  readonly #pending = new Set<string>()
  readonly #clock: Clock
  readonly #revFile: JsonlFile | undefined
  readonly #treeFile: JsonlFile | undefined
  /** Links persisted and not yet pruned (what a tree compaction keeps). */
  readonly #links = new Map<string, Link>()
  #seq = 0
  readonly #cluster: PassportClusterStore | undefined

  private constructor(clock: Clock, feedId: string, revFile?: JsonlFile, treeFile?: JsonlFile, cluster?: PassportClusterStore) {
    this.#clock = clock
    this.feedId = feedId
    this.#revFile = revFile
    this.#treeFile = treeFile
    this.#cluster = cluster
    this.set = new RevocationSet({ clock, graceSec: GRACE_SEC, capacity: 1_000_000 })
  }

  /**
   * Opens the log (replaying `dir` when given). `observe` hears the outcome of every write (the
   * disk health). Expired entries are compacted away on start when the disk allows; when it does
   * not, the log opens anyway (the next compaction tries again).
   */
  static async open(clock: Clock, dir: string | undefined, observe: WriteObserver = () => undefined, cluster?: { store: PassportClusterStore; state: PassportClusterState }): Promise<RevocationLog> {
    if (cluster !== undefined) {
      // The cluster's state: its feed seqs are this node's own (a new feed id per start).
      const log = new RevocationLog(clock, randomBytes(8).toString('hex'), undefined, undefined, cluster.store)
      const state = cluster.state
      log.applyRemote(state.revocations.slice().sort((a, b) => a.revokedAt - b.revokedAt))
      log.linkRemote(state.links)
      return log
    }
    if (dir === undefined) return new RevocationLog(clock, randomBytes(8).toString('hex'))
    const rev = await JsonlFile.open(join(dir, 'revocations.jsonl'), dir, 'passport revocation log', observe)
    const tree = await JsonlFile.open(join(dir, 'tree.jsonl'), dir, 'passport token tree', observe)
    const head = rev.lines[0] as { feedId?: unknown; seq?: unknown } | undefined
    const hasHeader = typeof head?.feedId === 'string'
    const feedId = hasHeader ? (head.feedId as string) : randomBytes(8).toString('hex')
    const log = new RevocationLog(clock, feedId, rev.file, tree.file)
    const nowSec = clock.now() / 1000
    for (const l of rev.lines.slice(hasHeader ? 1 : 0)) {
      const it = l as Partial<FeedItem>
      if (typeof it.jti !== 'string' || typeof it.seq !== 'number') continue
      log.#seq = Math.max(log.#seq, it.seq)
      const exp = typeof it.exp === 'number' ? it.exp : Math.floor(nowSec) + UNKNOWN_EXP_SEC
      // Long expired: no verifier needs it (its seq still counts, so the feed never goes back).
      if (exp + GRACE_SEC < nowSec) continue
      // Items written before retirements existed were all cascading revocations.
      log.#apply({ seq: it.seq, jti: it.jti, exp, revokedAt: typeof it.revokedAt === 'number' ? it.revokedAt : 0, cascade: it.cascade !== false })
    }
    if (hasHeader && typeof head.seq === 'number') log.#seq = Math.max(log.#seq, head.seq)
    for (const l of tree.lines) {
      const t = l as Partial<Link>
      if (typeof t.jti === 'string' && typeof t.prf === 'string' && typeof t.exp === 'number' && t.exp + GRACE_SEC >= nowSec) {
        log.#link(t.jti, t.prf, t.exp)
        log.#links.set(t.jti, { jti: t.jti, prf: t.prf, exp: t.exp })
      }
    }
    if (!hasHeader || rev.lines.length - 1 > log.#items.length) await log.#compactRevocations().catch(() => undefined)
    if (tree.lines.length > log.#links.size) await log.#compactTree().catch(() => undefined)
    return log
  }

  /** The last seq written. */
  get seq(): number {
    return this.#seq
  }

  /** True when `jti` is revoked or retired (what verification asks). */
  isRevoked(jti: string): boolean {
    return this.set.isRevoked(jti)
  }

  /** True when `jti` was revoked with its subtree. */
  revokesDescendants(jti: string): boolean {
    return this.set.revokesDescendants(jti)
  }

  /** True when nothing may be minted from `jti`: revoked, retired, or in a revocation being written. */
  blocksMinting(jti: string): boolean {
    return this.#pending.has(jti) || this.set.isRevoked(jti)
  }

  /**
   * Adopts `child` under `parent` in memory, synchronously: from here on a revocation of the
   * parent covers the child.
   * @throws {@link UnauthorizedError} (`revoked`) when the parent is revoked, retired or being revoked
   */
  adopt(child: string, parent: string, exp: number): void {
    if (this.blocksMinting(parent)) throw new UnauthorizedError('parent token revoked', { details: { reason: 'revoked', field: 'token' } })
    this.#link(child, parent, exp)
  }

  /** Makes the link of an adopted child durable (group commit); resolves once it is on disk. */
  async persistLink(child: string, parent: string, exp: number): Promise<void> {
    const link = { jti: child, prf: parent, exp }
    if (this.#cluster !== undefined && !(await this.#cluster.link(link))) {
      throw new UnauthorizedError('parent token revoked', { details: { reason: 'revoked', field: 'token' } })
    }
    await this.#treeFile?.append([link])
    this.#links.set(child, link)
  }

  /** Forgets an adopted child that was never handed out (its signing or its link failed). */
  abandon(child: string, parent: string): void {
    this.#tree.get(parent)?.children.delete(child)
    const node = this.#tree.get(child)
    if (node !== undefined && node.children.size === 0) this.#tree.delete(child)
  }

  /** Records a token's exp (so a revocation by jti knows how long to keep the entry). */
  noteIssued(jti: string, exp: number): void {
    if (!this.#tree.has(jti)) this.#tree.set(jti, { exp, children: new Set() })
  }

  /**
   * Revokes `jti` — with `cascade` (a leak) every token minted from it too, children,
   * grandchildren…; without (a retirement) only the token itself. The in-memory set and the feed
   * change only after the items are on disk. Ids already covered as strongly keep their item.
   * Single writer: only the revocation worker calls this.
   * @throws {@link NotReadyError} (`disk_full`, `io_error`, `read_only`) when the disk refuses:
   *   nothing is applied
   */
  async revoke(jti: string, options: { exp?: number | undefined; cascade: boolean }): Promise<RevokeOutcome> {
    const now = this.#clock.now()
    const ids = options.cascade ? this.#subtree(jti) : [jti]
    const written: FeedItem[] = []
    let seq = this.#seq
    for (const id of ids) {
      const prev = this.#latest.get(id)
      // Covered already: revoked (cascading covers everything), or retired and this is a retirement.
      if (prev !== undefined && this.set.isRevoked(id) && (prev.cascade || !options.cascade)) continue
      const node = this.#tree.get(id)
      const exp = id === jti && options.exp !== undefined ? options.exp : (node?.exp ?? Math.floor(now / 1000) + UNKNOWN_EXP_SEC)
      written.push({ seq: ++seq, jti: id, exp, revokedAt: now, cascade: options.cascade })
    }
    for (const id of ids) this.#pending.add(id)
    try {
      await this.#revFile?.append(written)
      if (this.#cluster !== undefined) {
        // The subtree as the cluster knows it: children minted on other nodes too.
        const more = await this.#cluster.revoke(
          written.map((i) => ({ jti: i.jti, exp: i.exp, revokedAt: i.revokedAt, cascade: i.cascade })),
          options.cascade,
        )
        for (const m of more) {
          if (ids.includes(m.jti)) continue
          ids.push(m.jti)
          written.push({ seq: ++seq, jti: m.jti, exp: m.exp, revokedAt: m.revokedAt, cascade: m.cascade })
        }
      }
    } finally {
      for (const id of ids) this.#pending.delete(id)
    }
    for (const item of written) this.#apply(item)
    let covered = 0
    for (const id of ids) covered = Math.max(covered, this.#latest.get(id)?.seq ?? 0)
    return { seq: covered, revoked: ids, written }
  }

  /**
   * Applies revocations stored by other nodes of the cluster (or at load), each under a new seq of
   * this node's feed unless it is covered already (the watch also returns this node's own).
   * @returns the items applied (to publish on the feed)
   */
  applyRemote(items: readonly ClusterRevocation[]): FeedItem[] {
    const out: FeedItem[] = []
    for (const i of items) {
      const prev = this.#latest.get(i.jti)
      if (prev !== undefined && this.set.isRevoked(i.jti) && (prev.cascade || !i.cascade)) continue
      const item: FeedItem = { seq: this.#seq + 1, jti: i.jti, exp: i.exp, revokedAt: i.revokedAt, cascade: i.cascade }
      this.#apply(item)
      out.push(item)
    }
    return out
  }

  /** Takes in parent links stored by other nodes of the cluster (their mints). */
  linkRemote(links: readonly Link[]): void {
    for (const l of links) this.#link(l.jti, l.prf, l.exp)
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
      if (it.exp + GRACE_SEC < nowSec) continue
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

  /**
   * Drops tree nodes, links and feed items of long-expired tokens (the feed's seq never goes
   * back), and compacts a file that holds many more lines than are live. Returns how many tree
   * nodes went.
   * @throws {@link NotReadyError} when a compaction hits a disk fault (nothing is lost: the old file stays)
   */
  async prune(): Promise<number> {
    const nowSec = this.#clock.now() / 1000
    const before = this.#items.length
    this.#items = this.#items.filter((it) => it.exp + GRACE_SEC >= nowSec)
    if (this.#items.length !== before) this.#latest = new Map(this.#items.map((it) => [it.jti, it]))
    let n = 0
    for (const [jti, node] of this.#tree) {
      if (node.exp + GRACE_SEC < nowSec) {
        this.#tree.delete(jti)
        this.#links.delete(jti)
        n++
      }
    }
    this.set.purge()
    const due = (file: JsonlFile | undefined, live: number): boolean => file !== undefined && file.lineCount > Math.max(2 * live, live + COMPACT_SLACK)
    if (due(this.#revFile, this.#items.length)) await this.#compactRevocations()
    if (due(this.#treeFile, this.#links.size)) await this.#compactTree()
    return n
  }

  /** Waits for pending writes and closes the files. */
  async close(): Promise<void> {
    await this.#revFile?.close()
    await this.#treeFile?.close()
  }

  #compactRevocations(): Promise<void> {
    // The header keeps the seq floor, so the feed never goes back even with no item left.
    return this.#revFile?.rewrite(() => [{ feedId: this.feedId, seq: this.#seq }, ...this.#items]) ?? Promise.resolve()
  }

  #compactTree(): Promise<void> {
    return this.#treeFile?.rewrite(() => [...this.#links.values()]) ?? Promise.resolve()
  }

  #subtree(jti: string): string[] {
    const out: string[] = []
    const seen = new Set<string>()
    const queue = [jti]
    for (let i = 0; i < queue.length; i++) {
      const id = queue[i]!
      if (seen.has(id)) continue
      seen.add(id)
      out.push(id)
      const node = this.#tree.get(id)
      if (node !== undefined) for (const c of node.children) queue.push(c)
    }
    return out
  }

  #apply(item: FeedItem): void {
    this.#items.push(item)
    this.#latest.set(item.jti, item)
    this.#seq = Math.max(this.#seq, item.seq)
    this.set.add(item.jti, item.exp, { cascade: item.cascade })
  }

  #link(child: string, parent: string, exp: number): void {
    let p = this.#tree.get(parent)
    if (p === undefined) {
      // Parent exp ≥ child exp; unknown parents (tokens not issued here) are kept as long as the child.
      p = { exp, children: new Set() }
      this.#tree.set(parent, p)
    } else if (exp > p.exp) {
      // A parent outlives its children: never prune it (and lose its subtree) before the last one.
      p.exp = exp
    }
    p.children.add(child)
    if (!this.#tree.has(child)) this.#tree.set(child, { exp, children: new Set() })
  }
}
