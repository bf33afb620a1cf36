/**
 * The Committer: the one task that owns the proposals table, HEAD and the log. The HTTP listener
 * try-sends commands into two bounded queues (`proposals`: propose, commit, supersede;
 * `approvals`: approve) and awaits the reply; a full queue answers 429 `Busy` at once. The
 * Committer handles one command at a time, so nothing else ever moves HEAD.
 *
 * @module
 */

import { randomFillSync } from 'node:crypto'
import {
  BoundedQueue,
  BusyError,
  CanceledError,
  ChainMismatchError,
  ClosedError,
  ConflictError,
  DuplicateApprovalError,
  InvalidSignatureError,
  NotFoundError,
  QuorumNotMetError,
  TimeoutError,
  abortReason,
  isRonError,
} from '@ron/core'
import type { Address, Broadcast, Clock, Logger, MetricsSink } from '@ron/core'
import { canonicalPayload, signerSetOf, type DescriptorSet, type SignerSet } from './descriptors.js'
import type { RegistryLog } from './log.js'
import type { SharedLog, SharedProposal } from './store/shared.js'
import { countQuorum, evaluateQuorum, forgetVerdicts, keyOf, verifyWellFormedApprovalSig, type Approval, type ApprovalSubject, type QuorumProgress } from './signers.js'
import { CHANNELS } from './topology.js'
import { writeFault } from './write-fault.js'

/** `RegistryUpdated{version,b3}`: what the Committer broadcasts on `committed` after each commit. */
export interface RegistryUpdated {
  type: 'RegistryUpdated'
  version: number
  /** The committed payload's `payloadB3`. */
  b3: Address
  /** The entry hash (HEAD's hash). */
  hash: Address
  committedAt: number
}

/** A proposal as the API shows it. */
export interface ProposalView {
  proposalId: string
  payloadB3: Address
  baseVersion: number
  expiresAt: number
  createdAt: number
  approvals: Array<{ signerId: string }>
  quorum: QuorumProgress
  /** Progress of the new signer set when the payload changes it. */
  nextQuorum?: QuorumProgress
  /** Set once committed. */
  committedVersion?: number
  payload: DescriptorSet
}

/** The answer to an approval. */
export interface ApprovalResult {
  /** Distinct keys of the set in force that approved. */
  approvals: number
  quorum: { m: number; n: number }
  /** Progress of the new signer set (signer-set changes only). */
  next?: QuorumProgress
  /** Both thresholds met: the proposal can be committed. */
  ready: boolean
}

/** The answer to a commit. */
export interface CommitResult {
  version: number
  payloadB3: Address
  committedAt: number
  treeSize: number
  /** Root hash of the tree after this entry, lowercase hex. */
  root: string
  /** The entry hash. */
  hash: Address
}

interface Proposal {
  id: string
  payload: DescriptorSet
  payloadB3: Address
  /** The payload's canonical JSON when this node computed it (a commit splices it into the entry; dropped once committed). */
  payloadJson: string | undefined
  /** What its approvals sign (made once: every recount and commit reuses it). */
  subject: ApprovalSubject
  baseVersion: number
  baseHash: Address
  createdAt: number
  expiresAt: number
  approvals: Approval[]
  nextSet: SignerSet | undefined
  /** Always undefined: a committed proposal is replaced by its {@link CommittedProposal}. */
  committed: undefined
}

/**
 * What a committed proposal keeps until it expires: enough to answer a retried commit (the same
 * {@link CommitResult}) and a view (its payload and approvals are read back from the log entry).
 * The payload, approvals and canonical JSON of the {@link Proposal} it replaces die young.
 */
interface CommittedProposal {
  id: string
  payloadB3: Address
  baseVersion: number
  createdAt: number
  expiresAt: number
  committed: CommitResult
}

type Held = Proposal | CommittedProposal

type Command =
  | { type: 'propose'; payload: DescriptorSet; baseVersion: number | undefined; done: Done<ProposalView> }
  | { type: 'approve'; id: string; approval: Approval; done: Done<ApprovalResult> }
  | { type: 'commit'; id: string; signal: CommitGate; approvals: Approval[] | undefined; done: Done<CommitResult> }
  | { type: 'get'; id: string; done: Done<ProposalView> }

/**
 * What a commit checks when the Committer takes it up: gone (`aborted`) means never written. An
 * `AbortSignal` is one; the commit route passes a lighter object (no AbortController per commit).
 */
export interface CommitGate {
  readonly aborted: boolean
  readonly reason: unknown
}

interface Done<T> {
  resolve(v: T): void
  reject(e: unknown): void
}

/** Live settings the Committer reads on every command (reloadable). */
export interface CommitterSettings {
  proposalTtlMs: number
  maxProposals: number
  slowCommitMs: number
}

/** Dependencies of the {@link Committer}. */
export interface CommitterOptions {
  log: RegistryLog
  committed: Broadcast<RegistryUpdated>
  capacity: { proposals: number; approvals: number }
  settings: () => CommitterSettings
  clock: Clock
  metrics: MetricsSink
  logger: Logger
  /** Told how long each append took (ms), or that it failed: drives write readiness. */
  onAppend?: (ms: number, error?: unknown) => void
  /**
   * Called after each durable append, before the commit is answered (the Notary signs the new
   * checkpoint here, so HEAD and the signed checkpoint never differ). Must not throw.
   */
  onCommitted?: (version: number) => void
  /** Told when following a shared log's appends fails (an entry that does not extend HEAD). */
  onFollowError?: (error: unknown) => void
}

// Proposal ids carry 12 random bytes, taken from a pool the CSPRNG refills 128 ids at a time
// (a proposal per commit cycle: one call per 128 of them instead of one each).
const ID_BYTES = 12
const idPool = Buffer.alloc(ID_BYTES * 128)
let idAt = idPool.length

/** A fresh proposal id, `p-` and 24 hex digits. */
function proposalId(): string {
  if (idAt === idPool.length) {
    randomFillSync(idPool)
    idAt = 0
  }
  const id = `p-${idPool.toString('hex', idAt, idAt + ID_BYTES)}`
  idAt += ID_BYTES
  return id
}

/** The single writer of HEAD and the log. */
export class Committer {
  readonly #o: CommitterOptions
  readonly #proposals = new Map<string, Held>()
  readonly #byPayload = new Map<string, string>()
  /** Expiry times, soonest first (entries of proposals already gone are skipped when popped). */
  readonly #expiries = new ExpiryHeap()
  /** Committed proposals still held (for retries and views), oldest commit first. */
  readonly #committedIds = new Set<string>()
  /** Proposals not yet committed: what `maxProposals` bounds. */
  #pending = 0
  readonly #queues: { proposals: BoundedQueue<Command>; approvals: BoundedQueue<Command> }
  #wake: (() => void) | undefined
  /** The expiry timer and the expiry it is armed for (kept across idle waits). */
  #timer: ReturnType<Clock['setTimeout']> | undefined
  #timerAt: number | undefined
  #running = false
  /** Errors already audited here (the route-level audit skips them). */
  readonly #audited = new WeakSet<object>()
  #closed = false
  /** The shared log (a cluster on etcd), when the store is shared. */
  readonly #shared: SharedLog | undefined
  /** Other nodes appended since this loop last followed. */
  #behind = false
  readonly #offAppend: (() => void) | undefined

  constructor(o: CommitterOptions) {
    this.#o = o
    this.#queues = {
      proposals: new BoundedQueue<Command>({ name: CHANNELS.proposals, capacity: o.capacity.proposals, metrics: o.metrics }),
      approvals: new BoundedQueue<Command>({ name: CHANNELS.approvals, capacity: o.capacity.approvals, metrics: o.metrics }),
    }
    this.#shared = o.log.store.shared
    this.#behind = this.#shared !== undefined
    this.#offAppend = this.#shared?.onAppend(() => {
      this.#behind = true
      this.#kick()
    })
  }

  /**
   * Proposals held: pending ones (at most `maxProposals`) and committed ones kept for retries
   * and views until they expire (the most recent `maxProposals` of them at most).
   */
  get size(): number {
    return this.#proposals.size
  }

  /** Proposals not yet committed (what `maxProposals` bounds). */
  get pending(): number {
    return this.#pending
  }

  /**
   * Proposes `payload` on the current HEAD (or fails with ChainMismatch when `baseVersion` is given
   * and HEAD is elsewhere). The same payload on the same base returns the existing proposal.
   * @throws {@link BusyError} when the `proposals` queue or the proposals table is full
   */
  propose(payload: DescriptorSet, baseVersion?: number): Promise<ProposalView> {
    return this.#submit('proposals', (done) => ({ type: 'propose', payload, baseVersion, done }))
  }

  /**
   * Records an approval. Its `sig` must match `APPROVAL_SIG_PATTERN` (signers.ts): the write routes
   * refuse any other (400) before it gets here, and it is not tested again.
   * @throws {@link NotFoundError}, {@link DuplicateApprovalError}, {@link InvalidSignatureError}, {@link BusyError}
   */
  approve(id: string, approval: Approval): Promise<ApprovalResult> {
    return this.#submit('approvals', (done) => ({ type: 'approve', id, approval, done }))
  }

  /**
   * Commits a proposal with quorum; a retry of a committed proposal returns the same entry.
   * `signal` is the caller's deadline (an `AbortSignal` or any {@link CommitGate}): a command still
   * queued when it aborts is not committed.
   * `approvals` (signatures matching `APPROVAL_SIG_PATTERN` (signers.ts), as the routes check them) are
   * recorded first, each exactly as {@link Committer.approve} would (one already
   * recorded with the same signature is skipped, so a retried call is harmless).
   * @throws {@link QuorumNotMetError}, {@link ChainMismatchError}, {@link NotFoundError}, {@link TimeoutError}, {@link BusyError},
   *   {@link NotReadyError} when the log cannot be written (`details.reason` `disk_full`, `io_error`, `read_only`),
   *   and for `approvals` {@link DuplicateApprovalError}, {@link InvalidSignatureError}
   */
  commit(id: string, signal: CommitGate, approvals?: Approval[]): Promise<CommitResult> {
    return this.#submit('proposals', (done) => ({ type: 'commit', id, signal, approvals, done }))
  }

  /** A proposal's view. @throws {@link NotFoundError} */
  get(id: string): Promise<ProposalView> {
    return this.#submit('approvals', (done) => ({ type: 'get', id, done }))
  }

  #submit<T>(queue: 'proposals' | 'approvals', make: (done: Done<T>) => Command): Promise<T> {
    if (this.#closed) return Promise.reject(new ClosedError('committer is closed'))
    return new Promise<T>((resolve, reject) => {
      const cmd = make({ resolve, reject })
      try {
        this.#queues[queue].trySend(cmd)
      } catch (e) {
        // The host counts every 429 in busy_rejections_total{endpoint,queue} from these details.
        reject(e instanceof BusyError ? new BusyError(e.message, { details: { endpoint: cmd.type, queue }, retryAfterMs: 1000 }) : (e as Error))
        return
      }
      this.#kick()
    })
  }

  #kick(): void {
    const w = this.#wake
    this.#wake = undefined
    w?.()
  }

  /**
   * The Committer's loop; runs until `signal` aborts, then fails what is still queued with
   * `Canceled`. Approvals are served before proposals so a burst of proposals cannot starve them.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('committer already running')
    this.#running = true
    // One abort listener for the whole loop (not one per idle wait).
    const onAbort = (): void => this.#kick()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal.aborted) {
        this.#expire()
        if (this.#behind) await this.#follow()
        const cmd = this.#queues.approvals.tryRecv() ?? this.#queues.proposals.tryRecv()
        if (cmd === undefined) {
          await this.#idle()
          continue
        }
        await this.#handle(cmd)
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      this.#disarm()
      this.#running = false
      // Shutdown: what is queued is canceled, and later commands fail Closed instead of waiting.
      if (signal.aborted) {
        this.#failQueued(abortReason(signal))
        this.close()
      }
    }
  }

  /** Refuses new commands and fails queued ones. Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#offAppend?.()
    this.#failQueued(new ClosedError('committer is closed'))
    this.#queues.proposals.close()
    this.#queues.approvals.close()
    this.#kick()
  }

  #failQueued(e: Error): void {
    for (const q of [this.#queues.approvals, this.#queues.proposals]) {
      for (let c = q.tryRecv(); c !== undefined; c = q.tryRecv()) {
        this.#o.metrics.inc('tasks_canceled_total', { kind: 'commit-command' })
        c.done.reject(e instanceof CanceledError || isRonError(e) ? e : new CanceledError('committer stopped'))
      }
    }
  }

  /**
   * Waits for a command, the next proposal expiry, or the signal (which kicks). The expiry timer
   * stays armed across waits while the soonest expiry is unchanged (it rarely changes: proposals
   * live `proposalTtlMs`), so a command costs no timer of its own.
   */
  #idle(): Promise<void> {
    const next = this.#expiries.peek()
    if (next !== this.#timerAt) {
      this.#disarm()
      if (next !== undefined) {
        const clock = this.#o.clock
        this.#timerAt = next
        this.#timer = clock.setTimeout(
          () => {
            this.#timer = undefined
            this.#timerAt = undefined
            this.#kick()
          },
          Math.max(0, next - clock.now()),
        )
        this.#timer.unref?.()
      }
    }
    return new Promise<void>((resolve) => {
      this.#wake = resolve
    })
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = undefined
  }

  /** Removes expired proposals: O(expired · log n) per call, not a scan of every proposal. */
  #expire(): void {
    const now = this.#o.clock.now()
    for (let at = this.#expiries.peek(); at !== undefined && at <= now; at = this.#expiries.peek()) {
      const id = this.#expiries.pop()!
      const p = this.#proposals.get(id)
      if (p === undefined || p.expiresAt > now) continue
      if (p.committed === undefined) this.#o.metrics.inc('registry_proposals_expired_total')
      this.#drop(p)
    }
    // Entries of proposals dropped early (committed ones over the cap) are skipped when popped;
    // rebuild when they outnumber live ones so the heap stays bounded by the proposals held.
    if (this.#expiries.size > 2 * this.#proposals.size + 64) this.#expiries.rebuild([...this.#proposals.values()].map((p) => ({ at: p.expiresAt, id: p.id })))
  }

  #drop(p: Held): void {
    this.#proposals.delete(p.id)
    const key = `${p.baseVersion}/${p.payloadB3}`
    if (this.#byPayload.get(key) === p.id) this.#byPayload.delete(key)
    if (p.committed === undefined) this.#pending--
    else this.#committedIds.delete(p.id)
  }

  async #handle(cmd: Command): Promise<void> {
    try {
      switch (cmd.type) {
        case 'propose':
          cmd.done.resolve(await this.#propose(cmd.payload, cmd.baseVersion))
          return
        case 'approve':
          cmd.done.resolve(await this.#approve(cmd.id, cmd.approval))
          return
        case 'get': {
          const found = await this.#find(cmd.id)
          const p = found.committed === undefined ? (this.#committedElsewhere(found) ?? found) : found
          cmd.done.resolve(p.committed === undefined ? this.#view(p) : await this.#committedView(p))
          return
        }
        case 'commit':
          cmd.done.resolve(await this.#commit(cmd.id, cmd.signal, cmd.approvals))
          return
      }
    } catch (e) {
      // A read of a proposal is not a mutation: its 404 is no rejected write.
      if (cmd.type !== 'get') this.#audit(cmd.type, 'rejected', e)
      cmd.done.reject(e)
    }
  }

  /** True when `e` was refused by this committer and is already in the audit (`<op>_rejected`). */
  audited(e: unknown): boolean {
    return typeof e === 'object' && e !== null && this.#audited.has(e)
  }

  #audit(op: string, result: 'accepted' | 'rejected', e?: unknown): void {
    this.#o.metrics.inc('registry_updates_total', { result: result === 'accepted' ? `${op}` : `${op}_rejected` })
    if (typeof e === 'object' && e !== null) this.#audited.add(e)
    if (result === 'rejected') this.#o.logger.info({ op, code: isRonError(e) ? e.code : 'Internal' }, 'registry mutation rejected')
    else this.#o.logger.info({ op }, 'registry mutation accepted')
  }

  /** A live proposal: held here, or (shared log) made on another node and held from now on. */
  async #find(id: string): Promise<Held> {
    const p = this.#proposals.get(id)
    if (p !== undefined && p.expiresAt > this.#o.clock.now()) return p
    const s = p === undefined && this.#shared !== undefined && /^p-[0-9a-f]{24}$/.test(id) ? await this.#shared.proposals.get(id) : undefined
    if (s === undefined || s.expiresAt <= this.#o.clock.now()) throw new NotFoundError('no such proposal (unknown or expired)', { details: { proposalId: id } })
    return this.#hold(s)
  }

  /** Holds a proposal of the shared table here (it counts against `maxProposals` like one made here). */
  #hold(s: SharedProposal): Held {
    const held = this.#proposals.get(s.id)
    if (held !== undefined) {
      if (held.committed === undefined) this.#merge(held, s.approvals)
      return held
    }
    const set = signerSetOf(s.payload)
    const p: Proposal = {
      id: s.id,
      payload: s.payload,
      payloadB3: s.payloadB3,
      payloadJson: undefined,
      subject: { origin: this.#o.log.origin, baseVersion: s.baseVersion, payloadB3: s.payloadB3 },
      baseVersion: s.baseVersion,
      baseHash: s.baseHash,
      createdAt: s.createdAt,
      expiresAt: s.expiresAt,
      approvals: [],
      nextSet: set === undefined ? undefined : { threshold: set.threshold, signers: set.signers },
      committed: undefined,
    }
    this.#merge(p, s.approvals)
    this.#proposals.set(p.id, p)
    this.#byPayload.set(`${p.baseVersion}/${p.payloadB3}`, p.id)
    this.#expiries.push(p.expiresAt, p.id)
    this.#pending++
    return p
  }

  /** Adds approvals recorded by other nodes (one per signer; quorum counting verifies each). */
  #merge(p: Proposal, approvals: readonly Approval[]): void {
    for (const a of approvals) if (!p.approvals.some((x) => x.signerId === a.signerId)) p.approvals.push({ signerId: a.signerId, sig: a.sig })
  }

  /** Takes in other nodes' appends (shared log): publishes each as a commit and checkpoints it. */
  async #follow(): Promise<void> {
    this.#behind = false
    let news
    try {
      news = await this.#o.log.catchUp()
    } catch (e) {
      this.#o.logger.error({ err: e }, 'cannot follow the shared log')
      this.#o.onFollowError?.(e)
      return
    }
    if (news.length === 0) return
    const head = this.#o.log.head()
    this.#o.metrics.set('registry_head_version', undefined, head.version)
    this.#o.onCommitted?.(head.version)
    for (const enc of news) {
      this.#o.committed.publish({ type: 'RegistryUpdated', version: enc.entry.version, b3: enc.entry.payloadB3, hash: enc.hash, committedAt: enc.entry.committedAt })
    }
  }

  /**
   * Shared log: true (and the proposal marked committed) when another node committed it: the
   * entry after its base is its payload on its base.
   */
  #committedElsewhere(p: Proposal): CommittedProposal | undefined {
    const log = this.#o.log
    if (this.#shared === undefined || log.head().version <= p.baseVersion) return undefined
    const version = p.baseVersion + 1
    // Recent entries are in the log's cache; an older one is not worth a read here.
    const e = log.cached(version)
    if (e === undefined || e.entry.payloadB3 !== p.payloadB3 || e.entry.prev !== p.baseHash) return undefined
    return this.#settle(p, { version, payloadB3: p.payloadB3, committedAt: e.entry.committedAt, treeSize: version, root: log.rootHex(version), hash: e.hash })
  }

  /**
   * Replaces committed `p` by its {@link CommittedProposal}: what is kept for retries and views
   * until it expires (the most recent `maxProposals` at most; a retry later than that gets
   * NotFound, the entry is in the log). Its payload, approvals and their verdicts are dropped
   * now, so they die young instead of being copied into the old generation (a view reads them
   * back from the log).
   */
  #settle(p: Proposal, result: CommitResult): CommittedProposal {
    const c: CommittedProposal = { id: p.id, payloadB3: p.payloadB3, baseVersion: p.baseVersion, createdAt: p.createdAt, expiresAt: p.expiresAt, committed: result }
    this.#proposals.set(p.id, c)
    // HEAD moved past its base for good: no proposal can have this key again.
    const key = `${p.baseVersion}/${p.payloadB3}`
    if (this.#byPayload.get(key) === p.id) this.#byPayload.delete(key)
    forgetVerdicts(p.approvals)
    this.#pending--
    this.#committedIds.add(p.id)
    const max = this.#o.settings().maxProposals
    for (const old of this.#committedIds) {
      if (this.#committedIds.size <= max) break
      const q = this.#proposals.get(old)
      if (q === undefined) this.#committedIds.delete(old)
      else this.#drop(q)
    }
    return c
  }

  /**
   * The view of a committed proposal: its payload and approvals (in the entry's order, by
   * `signerId`) read from the log entry.
   * @throws {@link NotFoundError} when retention pruned the entry meanwhile
   */
  async #committedView(c: CommittedProposal): Promise<ProposalView> {
    const log = this.#o.log
    const r = await log.read(c.committed.version)
    if (r === undefined || 'pruned' in r) {
      throw new NotFoundError(`proposal ${c.id} was committed as version ${c.committed.version}, whose entry was pruned`, { details: { proposalId: c.id, version: c.committed.version } })
    }
    const { payload, approvals } = r.entry
    const subject: ApprovalSubject = { origin: log.origin, baseVersion: c.baseVersion, payloadB3: c.payloadB3 }
    const next = signerSetOf(payload)
    const v: ProposalView = {
      proposalId: c.id,
      payloadB3: c.payloadB3,
      baseVersion: c.baseVersion,
      expiresAt: c.expiresAt,
      createdAt: c.createdAt,
      approvals: approvals.map((a) => ({ signerId: a.signerId })),
      quorum: countQuorum(log.signerSetAt(c.baseVersion), approvals, subject),
      payload,
    }
    if (next !== undefined) v.nextQuorum = countQuorum({ threshold: next.threshold, signers: next.signers }, approvals, subject)
    v.committedVersion = c.committed.version
    return v
  }

  #subject(p: Proposal): ApprovalSubject {
    return p.subject
  }

  #view(p: Proposal): ProposalView {
    const subject = this.#subject(p)
    const v: ProposalView = {
      proposalId: p.id,
      payloadB3: p.payloadB3,
      baseVersion: p.baseVersion,
      expiresAt: p.expiresAt,
      createdAt: p.createdAt,
      approvals: p.approvals.map((a) => ({ signerId: a.signerId })),
      quorum: countQuorum(this.#o.log.signerSetAt(p.baseVersion), p.approvals, subject),
      payload: p.payload,
    }
    if (p.nextSet !== undefined) v.nextQuorum = countQuorum(p.nextSet, p.approvals, subject)
    return v
  }

  async #propose(payload: DescriptorSet, baseVersion: number | undefined): Promise<ProposalView> {
    if (this.#shared !== undefined) {
      // Propose on the cluster's HEAD, not on what this node has followed so far.
      await this.#shared.sync()
      await this.#follow()
    }
    const head = this.#o.log.head()
    if (baseVersion !== undefined && baseVersion !== head.version) {
      throw new ChainMismatchError(`HEAD is at ${head.version}, not ${baseVersion}`, { details: { head: head.version, baseVersion } })
    }
    const { json, b3 } = canonicalPayload(payload)
    const key = `${head.version}/${b3}`
    const existing = this.#byPayload.get(key)
    const held = existing === undefined ? undefined : this.#proposals.get(existing)
    if (held !== undefined) return held.committed === undefined ? this.#view(held) : this.#committedView(held)
    const s = this.#o.settings()
    if (this.#pending >= s.maxProposals) {
      throw new BusyError(`${s.maxProposals} proposals are pending`, { details: { endpoint: 'propose', queue: 'proposals', reason: 'proposals_full' }, retryAfterMs: 1000 })
    }
    const now = this.#o.clock.now()
    const set = signerSetOf(payload)
    const p: Proposal = {
      id: proposalId(),
      payload,
      payloadB3: b3,
      payloadJson: json,
      subject: { origin: this.#o.log.origin, baseVersion: head.version, payloadB3: b3 },
      baseVersion: head.version,
      baseHash: head.hash,
      createdAt: now,
      expiresAt: now + s.proposalTtlMs,
      approvals: [],
      nextSet: set === undefined ? undefined : { threshold: set.threshold, signers: set.signers },
      committed: undefined,
    }
    if (this.#shared !== undefined) {
      // The same payload on the same base proposed on another node is that node's proposal.
      const { payloadJson: _json, subject: _subject, ...shared } = p
      const stored = await this.#shared.proposals.create({ ...shared, approvals: [] })
      if (stored.id !== p.id) {
        this.#audit('propose', 'accepted')
        const h = this.#hold(stored)
        return h.committed === undefined ? this.#view(h) : this.#committedView(h)
      }
    }
    this.#proposals.set(p.id, p)
    this.#byPayload.set(key, p.id)
    this.#expiries.push(p.expiresAt, p.id)
    this.#pending++
    this.#audit('propose', 'accepted')
    return this.#view(p)
  }

  /**
   * Records an approval. `localOnly`: not in the shared table (yet): a commit carrying its
   * approvals writes them there only when they do not reach the quorum, since a commit that
   * succeeds keeps them in its entry and one that loses HEAD leaves a dead proposal.
   */
  async #approve(id: string, a: Approval, localOnly = false): Promise<ApprovalResult> {
    const found = await this.#find(id)
    const p = found.committed === undefined ? (this.#committedElsewhere(found) ?? found) : found
    if (p.committed !== undefined) throw new ConflictError('proposal is already committed', { details: { proposalId: id, version: p.committed.version } })
    if (p.approvals.some((x) => x.signerId === a.signerId)) {
      throw new DuplicateApprovalError(`signer ${a.signerId} already approved`, { details: { proposalId: id, signerId: a.signerId } })
    }
    const current = this.#o.log.signerSetAt(p.baseVersion)
    const subject = this.#subject(p)
    const keys = [keyOf(current, a.signerId), p.nextSet === undefined ? undefined : keyOf(p.nextSet, a.signerId)].filter((k): k is string => k !== undefined)
    if (keys.length === 0) {
      this.#o.metrics.inc('registry_approvals_total', { result: 'unknown_signer' })
      throw new InvalidSignatureError(`signer ${a.signerId} is not in the signer set in force`, { details: { signerId: a.signerId, reason: 'unknown_signer' } })
    }
    // The routes let through only signatures matching APPROVAL_SIG_PATTERN (400 otherwise).
    if (!keys.some((k) => verifyWellFormedApprovalSig(k, a.sig, subject))) {
      this.#o.metrics.inc('registry_approvals_total', { result: 'bad_signature' })
      throw new InvalidSignatureError(`approval by ${a.signerId} does not verify`, { details: { signerId: a.signerId, reason: 'bad_signature' } })
    }
    if (this.#shared !== undefined && !localOnly) {
      const r = await this.#shared.proposals.addApproval(id, { signerId: a.signerId, sig: a.sig })
      if (r === 'unknown') throw new NotFoundError('no such proposal (unknown or expired)', { details: { proposalId: id } })
      if (r === 'duplicate') {
        const fresh = await this.#shared.proposals.get(id)
        if (fresh !== undefined) this.#merge(p, fresh.approvals)
        throw new DuplicateApprovalError(`signer ${a.signerId} already approved`, { details: { proposalId: id, signerId: a.signerId } })
      }
    }
    p.approvals.push({ signerId: a.signerId, sig: a.sig })
    this.#o.metrics.inc('registry_approvals_total', { result: 'accepted' })
    this.#audit('approve', 'accepted')
    const verdict = evaluateQuorum(current, p.nextSet, p.approvals, subject)
    const r: ApprovalResult = { approvals: verdict.current.have, quorum: { m: verdict.current.m, n: verdict.current.n }, ready: verdict.ok }
    if (verdict.next !== undefined) r.next = verdict.next
    return r
  }

  async #commit(id: string, signal: CommitGate, carried: Approval[] | undefined): Promise<CommitResult> {
    const p = await this.#find(id)
    if (p.committed !== undefined) return p.committed
    const elsewhere = this.#committedElsewhere(p)
    if (elsewhere !== undefined) return elsewhere.committed
    if (signal.aborted) {
      throw signal.reason instanceof TimeoutError ? signal.reason : new TimeoutError('commit deadline passed while queued', { details: { op: 'commit' } })
    }
    const recorded: Approval[] = []
    for (const a of carried ?? []) {
      if (p.approvals.some((x) => x.signerId === a.signerId && x.sig === a.sig)) continue
      await this.#approve(id, { signerId: a.signerId, sig: a.sig }, true)
      recorded.push(a)
    }
    if (this.#shared !== undefined && (carried === undefined || !evaluateQuorum(this.#o.log.signerSetAt(p.baseVersion), p.nextSet, p.approvals, this.#subject(p)).ok)) {
      // Short of the quorum: the carried approvals go to the shared table (for a commit on any
      // node), and approvals recorded on other nodes count too.
      for (const a of recorded) await this.#shared.proposals.addApproval(id, a)
      const fresh = await this.#shared.proposals.get(id)
      if (fresh !== undefined) this.#merge(p, fresh.approvals)
    }
    const log = this.#o.log
    const current = log.signerSetAt(p.baseVersion)
    const subject = this.#subject(p)
    const verdict = evaluateQuorum(current, p.nextSet, p.approvals, subject)
    if (!verdict.ok) {
      const details: Record<string, unknown> = { proposalId: id, have: verdict.current.have, m: verdict.current.m, n: verdict.current.n }
      if (verdict.next !== undefined) details['next'] = verdict.next
      throw new QuorumNotMetError(
        verdict.current.have < verdict.current.m
          ? `${verdict.current.have} of ${verdict.current.m} required approvals`
          : `the new signer set has ${verdict.next?.have ?? 0} of its ${verdict.next?.m ?? 0} required approvals`,
        { details },
      )
    }
    const head = log.head()
    if (head.version !== p.baseVersion || head.hash !== p.baseHash) {
      this.#o.metrics.inc('commit_cas_fail_total')
      throw new ChainMismatchError(`HEAD moved from ${p.baseVersion} to ${head.version}; propose again on the new HEAD`, {
        details: { proposalId: id, baseVersion: p.baseVersion, head: head.version },
      })
    }
    // Only approvals that verify for one of the sets go into the entry, in a stable order.
    const approvals = bySignerId(p.approvals)
    const started = this.#o.clock.now()
    let enc
    try {
      enc = await log.append({ version: p.baseVersion, hash: p.baseHash }, p.payload, approvals, started, { b3: p.payloadB3, json: p.payloadJson })
    } catch (e) {
      this.#o.onAppend?.(this.#o.clock.now() - started, e)
      // Not acknowledged, and nothing of it left in the log: a disk fault answers 503 NotReady
      // (disk_full, io_error, read_only), never 500.
      throw writeFault(e)
    }
    this.#o.onAppend?.(this.#o.clock.now() - started)
    if (enc === undefined) {
      this.#o.metrics.inc('commit_cas_fail_total')
      if (this.#shared !== undefined) {
        // Another node appended first: follow it (it may even have committed this very proposal).
        await this.#follow()
        const c = this.#committedElsewhere(p)
        if (c !== undefined) return c.committed
      }
      throw new ChainMismatchError('HEAD moved during the commit', { details: { proposalId: id, baseVersion: p.baseVersion } })
    }
    this.#o.onCommitted?.(enc.entry.version)
    const result: CommitResult = {
      version: enc.entry.version,
      payloadB3: enc.entry.payloadB3,
      committedAt: enc.entry.committedAt,
      treeSize: log.tree.size,
      root: log.rootHex(),
      hash: enc.hash,
    }
    // Kept for retries and views until it expires, without its payload and approvals.
    this.#settle(p, result)
    this.#audit('commit', 'accepted')
    this.#o.metrics.set('registry_head_version', undefined, result.version)
    // Never blocks: every subscriber has its own ring; a slow one loses the oldest (bus_lagged_total).
    this.#o.committed.publish({ type: 'RegistryUpdated', version: result.version, b3: result.payloadB3, hash: result.hash, committedAt: result.committedAt })
    return result
  }
}

/**
 * A copy of `approvals` sorted by `signerId` (an insertion sort: a quorum is a few approvals, and
 * `Array.prototype.sort` with a comparator allocates a work copy of its own on every call).
 */
function bySignerId(approvals: readonly Approval[]): Approval[] {
  const out = approvals.slice()
  for (let i = 1; i < out.length; i++) {
    const a = out[i]!
    let j = i - 1
    for (; j >= 0 && out[j]!.signerId > a.signerId; j--) out[j + 1] = out[j]!
    out[j + 1] = a
  }
  return out
}

/** A binary min-heap of proposal expiry times. */
class ExpiryHeap {
  #at: number[] = []
  #id: string[] = []

  get size(): number {
    return this.#at.length
  }

  /** The soonest expiry, if any. */
  peek(): number | undefined {
    return this.#at[0]
  }

  push(at: number, id: string): void {
    const a = this.#at
    const d = this.#id
    let i = a.length
    a.push(at)
    d.push(id)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (a[parent]! <= at) break
      a[i] = a[parent]!
      d[i] = d[parent]!
      i = parent
    }
    a[i] = at
    d[i] = id
  }

  /** Removes the soonest entry and returns its id. */
  pop(): string | undefined {
    const a = this.#at
    const d = this.#id
    if (a.length === 0) return undefined
    const top = d[0]!
    const lastAt = a.pop()!
    const lastId = d.pop()!
    const n = a.length
    if (n > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const c = l + 1 < n && a[l + 1]! < a[l]! ? l + 1 : l
        if (a[c]! >= lastAt) break
        a[i] = a[c]!
        d[i] = d[c]!
        i = c
      }
      a[i] = lastAt
      d[i] = lastId
    }
    return top
  }

  /** Replaces the contents. */
  rebuild(entries: Array<{ at: number; id: string }>): void {
    this.#at = []
    this.#id = []
    for (const e of entries) this.push(e.at, e.id)
  }
}
