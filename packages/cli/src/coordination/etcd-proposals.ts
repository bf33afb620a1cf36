/**
 * The registry's pending proposals and their approvals on etcd (SPEC §6c), so that a proposal
 * made on one node is approved and committed on any other. Keys under `<prefix>proposals/`:
 * `p/<id>` (the proposal without approvals), `p/<id>/a/<signer id, base64url>` (one approval per
 * signer, created only once), and `index/<base version>/<payloadB3>` (`{id, expiresAt}`: the same
 * payload on the same base is one proposal cluster-wide). Expired proposals are removed by the
 * signer lease holder ({@link EtcdProposals.sweep}).
 *
 * @module
 */

import type { ProposalStore, SharedProposal } from '@ron/registry'
import { pad, relKey, type EtcdCoordinator } from './etcd.js'

const P = 'proposals/'
const proposalKey = (id: string): string => `${P}p/${id}`
const approvalKey = (id: string, signerId: string): string => `${P}p/${id}/a/${Buffer.from(signerId, 'utf8').toString('base64url')}`
const indexKey = (base: number, b3: string): string => `${P}index/${pad(base)}/${b3}`

type Approval = SharedProposal['approvals'][number]

/** The proposals table on etcd. */
export class EtcdProposals implements ProposalStore {
  readonly #c: EtcdCoordinator

  constructor(c: EtcdCoordinator) {
    this.#c = c
  }

  async create(p: SharedProposal): Promise<SharedProposal> {
    const kv = this.#c.kv
    const { approvals: _a, ...bare } = p
    const idx = indexKey(p.baseVersion, p.payloadB3)
    const r = await this.#c.call('propose', () =>
      kv
        .if(idx, 'Create', '==', 0)
        .then(kv.put(proposalKey(p.id)).value(JSON.stringify(bare)), kv.put(idx).value(JSON.stringify({ id: p.id, expiresAt: p.expiresAt })))
        .else(kv.get(idx))
        .commit(),
    )
    if (r.succeeded) return p
    const held = r.responses[0]?.response_range?.kvs?.[0]
    const other = held === undefined ? undefined : (JSON.parse(held.value.toString('utf8')) as { id: string; expiresAt: number })
    if (other !== undefined && other.expiresAt > this.#c.clock.now()) {
      const existing = await this.get(other.id)
      if (existing !== undefined) return existing
    }
    // The earlier one expired (not swept yet): this one replaces it.
    await this.#c.call('propose', () => kv.if(idx, 'Mod', '==', held?.mod_revision ?? '0').then(kv.put(proposalKey(p.id)).value(JSON.stringify(bare)), kv.put(idx).value(JSON.stringify({ id: p.id, expiresAt: p.expiresAt }))).commit())
    return p
  }

  async get(id: string): Promise<SharedProposal | undefined> {
    const res = await this.#c.call('propose', () => this.#c.kv.getAll().prefix(proposalKey(id)).exec())
    let p: SharedProposal | undefined
    const approvals: Approval[] = []
    const base = proposalKey(id)
    for (const kv of res.kvs) {
      const key = relKey(this.#c, kv.key)
      if (key === base) p = { ...(JSON.parse(kv.value.toString('utf8')) as Omit<SharedProposal, 'approvals'>), approvals }
      else if (key.startsWith(`${base}/a/`)) approvals.push({ signerId: Buffer.from(key.slice(base.length + 3), 'base64url').toString('utf8'), sig: kv.value.toString('utf8') })
    }
    return p
  }

  async addApproval(id: string, a: Approval): Promise<'added' | 'duplicate' | 'unknown'> {
    const kv = this.#c.kv
    const key = approvalKey(id, a.signerId)
    const r = await this.#c.call('approve', () =>
      kv
        .if(proposalKey(id), 'Create', '>', 0)
        .and(key, 'Create', '==', 0)
        .then(kv.put(key).value(a.sig))
        .else(kv.get(proposalKey(id)))
        .commit(),
    )
    if (r.succeeded) return 'added'
    return (r.responses[0]?.response_range?.kvs?.length ?? 0) === 0 ? 'unknown' : 'duplicate'
  }

  /** Removes expired proposals (with their approvals). @returns how many */
  async sweep(now: number): Promise<number> {
    const kv = this.#c.kv
    const res = await this.#c.call('propose', () => kv.getAll().prefix(`${P}index/`).limit(1000).exec())
    let n = 0
    for (const item of res.kvs) {
      const v = JSON.parse(item.value.toString('utf8')) as { id: string; expiresAt: number }
      if (v.expiresAt > now) continue
      const key = relKey(this.#c, item.key)
      await this.#c.call('propose', () => kv.if(key, 'Mod', '==', item.mod_revision).then(kv.delete().key(key), kv.delete().prefix(proposalKey(v.id))).commit())
      n++
    }
    return n
  }
}
