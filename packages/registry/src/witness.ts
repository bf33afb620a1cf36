/**
 * The Witness: a node cosigning the checkpoints of other nodes' logs (C2SP tlog-witness,
 * https://c2sp.org/tlog-witness). It lists the logs it witnesses as `{origin, key}` (the log's
 * note verifier key), signs with its own witness key (never a log's), and keeps, per log, the
 * size, root and tree hash of the last checkpoint it cosigned in its data directory, written
 * durably before it answers. It cosigns a checkpoint only when a consistency proof shows it
 * extends that last one, so a log cannot show it two diverging trees.
 *
 * `add-checkpoint` answers as C2SP says: 404 unknown origin, 403 no valid signature by the log's
 * key (or a failing one), 400 bad request, 409 `text/x.tlog.size` naming the size it knows when
 * the request's old size is not that one, 422 a proof or root that does not hold, 200 with the
 * cosignature line. Apart from the 409 body (fixed by C2SP), errors carry the SPEC envelope.
 *
 * @module
 */

import { createHash } from 'node:crypto'
import { z } from 'zod'
import { open, readFile, rename } from 'node:fs/promises'
import { dirname } from 'node:path'
import { BusyError, ForbiddenError, IntegrityFailedError, MalformedError, NotFoundError, NotReadyError, isRonError, toDiskFault } from '@ron/core'
import type { Clock, Logger, MetricsSink } from '@ron/core'
import { checkpointTreeHash, parseCheckpoint, parseNote, parseVerifierKey, verifyNote, type Checkpoint, type NoteVerifier } from './checkpoint.js'
import { cosign, type Cosigner } from './cosignature.js'
import { treeHasher, verifyConsistency, type TreeHashName } from './merkle.js'

/** A log this node witnesses. */
export interface WitnessedLog {
  /** The log's origin line. */
  origin: string
  /** The log's note verifier key (`name+id+base64(0x01 || key)`). */
  key: string
}

/** Config schema of a {@link WitnessedLog} (the key must be a note verifier key). */
export const witnessedLogSchema = z
  .strictObject({
    /** The log's origin line. */
    origin: z.string().min(1).max(255).regex(/^[^\n]+$/),
    /** The log's note verifier key (`name+id+base64(0x01 || key)`, printed by the log's `ron-node status`). */
    key: z.string().min(1).max(512),
  })
  .superRefine((l, ctx) => {
    try {
      parseVerifierKey(l.key)
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : 'not a verifier key', path: ['key'] })
    }
  })

/** What the witness remembers of one log. */
interface LogState {
  size: number
  /** Root of that size, base64. */
  root: string
  treeHash: TreeHashName
  /** The checkpoint as cosigned: the log's signature line and this witness's cosignature. */
  checkpoint: string
}

/** Results counted in `registry_witness_checkpoints_total{result}`. */
export const WITNESS_RESULTS = ['cosigned', 'malformed', 'unknown_log', 'bad_signature', 'conflict', 'bad_proof', 'busy'] as const

/** Dependencies of the {@link Witness}. */
export interface WitnessOptions {
  /** The witness key (its cosigner; re-read on every request: the name may be reloaded). */
  cosigner: () => Cosigner
  /** The logs it witnesses (reloadable). */
  logs: () => readonly WitnessedLog[]
  /** Where the state lives; in memory when absent (amnesia). */
  stateFile: string | undefined
  clock: Clock
  metrics: MetricsSink
  logger: Logger
  /** Requests waiting for the state at most. @default 64 */
  maxWaiting?: number
}

/** A 409 of `add-checkpoint`: the old size is not the size the witness cosigned last. */
export interface SizeConflict {
  conflict: true
  size: number
}

/** At most this many consistency proof lines (C2SP). */
const MAX_PROOF_LINES = 63

/** The witness side of C2SP tlog-witness. */
export class Witness {
  readonly #o: WitnessOptions
  #state: Map<string, LogState> | undefined
  #tail: Promise<unknown> = Promise.resolve()
  #waiting = 0
  #verifiers = new Map<string, NoteVerifier>()

  constructor(o: WitnessOptions) {
    this.#o = o
  }

  #count(result: (typeof WITNESS_RESULTS)[number]): void {
    this.#o.metrics.inc('registry_witness_checkpoints_total', { result })
  }

  /** This witness's verifier key (`name+id+base64(0x04 || key)`). */
  cosignerKey(): string {
    return this.#o.cosigner().verifierKey
  }

  /** The size this witness cosigned last for `origin` (0 when never). */
  async cosignedSize(origin: string): Promise<number> {
    return (await this.#load()).get(origin)?.size ?? 0
  }

  /** The latest checkpoint cosigned for the log whose origin hashes (SHA-256, hex) to `originHash`. */
  async latest(originHash: string): Promise<string | undefined> {
    for (const [origin, s] of await this.#load()) if (createHash('sha256').update(origin).digest('hex') === originHash) return s.checkpoint
    return undefined
  }

  /**
   * Handles an `add-checkpoint` request body.
   * @returns the cosignature line, or the size it knows when the old size does not match (409)
   * @throws {@link MalformedError} (400), {@link NotFoundError} (404 unknown origin),
   *   {@link ForbiddenError} (403), {@link IntegrityFailedError} (422), {@link BusyError} (429)
   */
  async addCheckpoint(body: Uint8Array): Promise<string | SizeConflict> {
    const req = this.#parse(body)
    const log = this.#o.logs().find((l) => l.origin === req.checkpoint.origin)
    if (log === undefined) {
      this.#count('unknown_log')
      throw new NotFoundError(`this witness does not witness ${req.checkpoint.origin}`, { details: { origin: req.checkpoint.origin } })
    }
    try {
      verifyNote(req.note, this.#verifier(log.key))
    } catch (e) {
      this.#count('bad_signature')
      throw new ForbiddenError(`checkpoint is not validly signed by the key of ${log.origin}: ${e instanceof Error ? e.message : String(e)}`, { details: { origin: log.origin } })
    }
    if (req.oldSize > req.checkpoint.treeSize) {
      this.#count('malformed')
      throw new MalformedError('old size exceeds the checkpoint size', { details: { field: 'old' } })
    }
    // Check and update are one step per witness (C2SP: never roll a log back by a late request).
    if (this.#waiting >= (this.#o.maxWaiting ?? 64)) {
      this.#count('busy')
      throw new BusyError('witness is busy', { details: { endpoint: 'add-checkpoint', queue: 'witness' }, retryAfterMs: 1000 })
    }
    this.#waiting++
    const run = this.#tail.then(() => this.#apply(log, req))
    this.#tail = run.catch(() => undefined)
    try {
      return await run
    } finally {
      this.#waiting--
    }
  }

  #verifier(vkey: string): NoteVerifier {
    let v = this.#verifiers.get(vkey)
    if (v === undefined) {
      v = parseVerifierKey(vkey)
      if (this.#verifiers.size > 1024) this.#verifiers.clear()
      this.#verifiers.set(vkey, v)
    }
    return v
  }

  #parse(body: Uint8Array): { oldSize: number; proof: Uint8Array[]; note: string; checkpoint: Checkpoint } {
    const bad = (msg: string): never => {
      this.#count('malformed')
      throw new MalformedError(`add-checkpoint: ${msg}`, { details: { field: 'body' } })
    }
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body)
    } catch {
      return bad('body is not UTF-8')
    }
    const blank = text.indexOf('\n\n')
    if (blank === -1) return bad('no empty line after the old size and proof')
    const head = text.slice(0, blank).split('\n')
    const old = /^old (0|[1-9][0-9]{0,15})$/.exec(head[0] ?? '')
    if (old === null) return bad("the first line must be 'old <size>'")
    const proofLines = head.slice(1)
    if (proofLines.length > MAX_PROOF_LINES) return bad(`more than ${MAX_PROOF_LINES} proof lines`)
    const proof = proofLines.map((l) => {
      const h = Buffer.from(l, 'base64')
      if (h.length !== 32 || h.toString('base64') !== l) bad('a proof line is not a base64 32-byte hash')
      return h
    })
    const note = text.slice(blank + 2)
    let checkpoint: Checkpoint
    try {
      checkpoint = parseCheckpoint(parseNote(note).text)
      checkpointTreeHash(checkpoint)
    } catch (e) {
      return bad(e instanceof Error ? e.message : 'not a checkpoint')
    }
    return { oldSize: Number(old[1]), proof, note, checkpoint }
  }

  async #apply(log: WitnessedLog, req: { oldSize: number; proof: Uint8Array[]; note: string; checkpoint: Checkpoint }): Promise<string | SizeConflict> {
    const state = await this.#load()
    const cp = req.checkpoint
    const known = state.get(log.origin)
    const knownSize = known?.size ?? 0
    if (req.oldSize !== knownSize) {
      this.#count('conflict')
      return { conflict: true, size: knownSize }
    }
    const treeHash = checkpointTreeHash(cp)
    const bad = (reason: string, msg: string): never => {
      this.#count('bad_proof')
      this.#o.logger.warn({ origin: log.origin, size: cp.treeSize, old: req.oldSize, reason }, 'witness refused a checkpoint: possible log misbehaviour')
      throw new IntegrityFailedError(msg, { details: { origin: log.origin, reason } })
    }
    // A log keeps one tree hash for life: a checkpoint stating another is inconsistent with the past.
    if (known !== undefined && known.treeHash !== treeHash) bad('tree_hash', `the log stated ${known.treeHash} before, now ${treeHash}`)
    const hasher = treeHasher(treeHash)
    if (cp.treeSize === 0 && Buffer.compare(cp.rootHash, hasher.emptyRoot) !== 0) bad('empty_root', 'a checkpoint of size 0 must have the empty root')
    if (req.oldSize === 0) {
      if (req.proof.length > 0) bad('bad_proof', 'no proof is needed from size 0')
    } else if (req.oldSize === cp.treeSize) {
      if (req.proof.length > 0 || Buffer.from(cp.rootHash).toString('base64') !== known!.root) bad('root_mismatch', 'same size, different root')
    } else if (!verifyConsistency(hasher, req.oldSize, cp.treeSize, req.proof, Buffer.from(known!.root, 'base64'), cp.rootHash)) {
      bad('bad_proof', `the consistency proof from ${req.oldSize} to ${cp.treeSize} does not verify`)
    }
    const c = this.#o.cosigner()
    const line = cosign(parseNote(req.note).text, c, Math.max(1, Math.floor(this.#o.clock.now() / 1000)))
    const logLines = req.note.slice(req.note.lastIndexOf('\n\n') + 2).split('\n').filter((l) => l.startsWith(`\u2014 ${parseVerifierKey(log.key).name} `))
    const text = req.note.slice(0, req.note.lastIndexOf('\n\n') + 2)
    const next = new Map(state)
    next.set(log.origin, { size: cp.treeSize, root: Buffer.from(cp.rootHash).toString('base64'), treeHash, checkpoint: `${text}${logLines.map((l) => `${l}\n`).join('')}${line}` })
    await this.#save(next)
    this.#state = next
    this.#count('cosigned')
    return line
  }

  async #load(): Promise<Map<string, LogState>> {
    if (this.#state !== undefined) return this.#state
    const file = this.#o.stateFile
    let state = new Map<string, LogState>()
    if (file !== undefined) {
      try {
        const doc = JSON.parse(await readFile(file, 'utf8')) as { logs?: Record<string, LogState> }
        state = new Map(Object.entries(doc.logs ?? {}))
      } catch (e) {
        // Never start over from nothing: forgetting what was cosigned would let a log roll back.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new NotReadyError(`witness state ${file} is unreadable; restore it (or remove it to forget every log's state)`, { details: { reason: 'io_error' }, cause: e, retryAfterMs: 5000 })
        }
      }
    }
    this.#state ??= state
    return this.#state
  }

  /** Writes the state durably: temporary file, fsync, rename, fsync of the directory. */
  async #save(state: Map<string, LogState>): Promise<void> {
    const file = this.#o.stateFile
    if (file === undefined) return
    const tmp = `${file}.tmp`
    try {
      const fh = await open(tmp, 'w', 0o644)
      try {
        await fh.writeFile(`${JSON.stringify({ format: 1, logs: Object.fromEntries(state) })}\n`)
        await fh.sync()
      } finally {
        await fh.close()
      }
      await rename(tmp, file)
      const dir = await open(dirname(file), 'r')
      try {
        await dir.sync()
      } finally {
        await dir.close()
      }
    } catch (e) {
      // Not cosigned: the state did not change (the rename is the commit point).
      const fault = toDiskFault(e, 'witness state')
      throw isRonError(fault) ? fault : new NotReadyError('witness state not writable', { details: { reason: 'io_error' }, cause: e, retryAfterMs: 1000 })
    }
  }
}
