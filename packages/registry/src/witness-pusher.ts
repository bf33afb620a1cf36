/**
 * The Witness Pusher: sends each new checkpoint of the log to the witnesses it lists
 * (`witnesses: [{name, url, key}]`) by C2SP tlog-witness `add-checkpoint` with a consistency
 * proof from the size the witness cosigned last, verifies the cosignature that comes back
 * (C2SP tlog-cosignature) and attaches it to the checkpoint the registry serves. One loop per
 * witness, so a slow or dead witness delays nobody else; only the latest checkpoint is ever sent
 * (a witness that lags skips the sizes in between); a failing witness is retried with backoff.
 * Every `checkpointIntervalMs` the same checkpoint is sent again for a fresh timestamp.
 *
 * @module
 */

import { z } from 'zod'
import { WakeableSleep, abortReason, backoffDelay, isRonError } from '@ron/core'
import type { Clock, Logger, MetricsSink, Random, Transport } from '@ron/core'
import { parseCosignerKey, verifyCosignature, type CosignerVerifier } from './cosignature.js'
import type { RegistryLog } from './log.js'
import type { Notary, SignedCheckpoint } from './notary.js'

/** A witness the log sends its checkpoints to. */
export interface WitnessEndpoint {
  /** The witness's key name. */
  name: string
  /** Its submission prefix: `add-checkpoint` is POSTed to `<url>/add-checkpoint`. */
  url: string
  /** Its cosignature verifier key (`name+id+base64(0x04 || key)`). */
  key: string
}

/** Config schema of a {@link WitnessEndpoint} (the key must be a cosignature key of that name). */
export const witnessEndpointSchema = z
  .strictObject({
    /** The witness's key name. */
    name: z.string().min(1).max(255).regex(/^[^\s+]+$/, 'a key name has no whitespace and no "+"'),
    /** Its submission prefix (`add-checkpoint` is POSTed to `<url>/add-checkpoint`); a ron-node's is `<registry URL>/registry/witness`. */
    url: z.url({ protocol: /^https?$/ }),
    /** Its cosignature verifier key, `name+id+base64(0x04 || key)`. */
    key: z.string().min(1).max(512),
  })
  .superRefine((w, ctx) => {
    try {
      if (parseCosignerKey(w.key).name !== w.name) ctx.addIssue({ code: 'custom', message: `the key is named '${w.key.split('+')[0] ?? ''}', not '${w.name}'`, path: ['key'] })
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : 'not a witness key', path: ['key'] })
    }
  })

/** Results counted in `registry_witness_requests_total{witness,result}`. */
export const PUSH_RESULTS = ['cosigned', 'conflict', 'rejected', 'unreachable', 'invalid'] as const

/** What the pusher knows of one witness. */
export interface WitnessStatus {
  name: string
  url: string
  /** The size it cosigned last, as far as this log knows. */
  cosignedSize: number | undefined
  /** The last failure, if the last request failed. */
  error?: string
}

/** Dependencies of the {@link WitnessPusher}. */
export interface WitnessPusherOptions {
  log: RegistryLog
  notary: Notary
  transport: Transport
  witnesses: () => readonly WitnessEndpoint[]
  /** The idle re-send period (the checkpoint interval). */
  intervalMs: () => number
  /** Deadline of one `add-checkpoint` call. */
  timeoutMs: () => number
  clock: Clock
  random: Random
  metrics: MetricsSink
  logger: Logger
}

/** Reads a response body up to `max` bytes. */
async function readCapped(body: AsyncIterable<Uint8Array>, max: number): Promise<string> {
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of body) {
    n += c.length
    if (n > max) throw new Error(`answer larger than ${max} bytes`)
    chunks.push(c)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const keyOf = (w: WitnessEndpoint): string => `${w.name}\n${w.url}\n${w.key}`

/** Sends checkpoints to witnesses and collects their cosignatures. */
export class WitnessPusher {
  readonly #o: WitnessPusherOptions
  readonly #status = new Map<string, WitnessStatus>()
  readonly #reconcile: WakeableSleep

  constructor(o: WitnessPusherOptions) {
    this.#o = o
    this.#reconcile = new WakeableSleep(o.clock)
  }

  /** Registers the metric lines of the configured witnesses at zero. */
  gauge(): void {
    for (const w of this.#o.witnesses()) for (const result of PUSH_RESULTS) this.#o.metrics.inc('registry_witness_requests_total', { witness: w.name, result }, 0)
  }

  /** Each configured witness and what is known of it. */
  status(): WitnessStatus[] {
    return this.#o.witnesses().map((w) => this.#status.get(keyOf(w)) ?? { name: w.name, url: w.url, cosignedSize: undefined })
  }

  /** Re-reads the witness list (after a reload). */
  reconfigure(): void {
    this.gauge()
    this.#reconcile.wake()
  }

  /** The task: one loop per configured witness, restarted when the list changes. */
  async run(signal: AbortSignal): Promise<void> {
    const loops = new Map<string, { ac: AbortController; done: Promise<void> }>()
    try {
      for (;;) {
        const wanted = new Map(this.#o.witnesses().map((w) => [keyOf(w), w]))
        for (const [k, l] of loops) {
          if (wanted.has(k)) continue
          l.ac.abort()
          loops.delete(k)
          this.#status.delete(k)
          await l.done
        }
        for (const [k, w] of wanted) {
          if (loops.has(k)) continue
          const ac = new AbortController()
          loops.set(k, { ac, done: this.#loop(w, ac.signal).catch((e: unknown) => this.#o.logger.error({ err: e, witness: w.name }, 'witness loop ended')) })
        }
        await this.#reconcile.sleep(3_600_000, signal)
      }
    } finally {
      for (const l of loops.values()) l.ac.abort()
      await Promise.all([...loops.values()].map((l) => l.done))
    }
  }

  async #loop(w: WitnessEndpoint, signal: AbortSignal): Promise<void> {
    const { notary, clock } = this.#o
    const verifier = parseCosignerKey(w.key)
    const status: WitnessStatus = { name: w.name, url: w.url, cosignedSize: undefined }
    this.#status.set(keyOf(w), status)
    const tick = new WakeableSleep(clock)
    let refresh = true
    const off = notary.subscribe((e) => {
      if (e.kind === 'refresh') refresh = true
      tick.wake()
    })
    let sent: number | undefined
    let failures = 0
    try {
      while (!signal.aborted) {
        const cp = notary.latest()
        if (sent !== cp.treeSize || refresh) {
          refresh = false
          try {
            await this.#push(w, verifier, cp, status, signal)
            sent = cp.treeSize
            failures = 0
          } catch (e) {
            if (signal.aborted) return
            status.error = e instanceof Error ? e.message : String(e)
            failures++
            refresh = true
            this.#o.metrics.inc('backoff_retries_total', { op: 'witness' })
            await sleepUnlessAborted(clock, backoffDelay(failures, { baseMs: 200, capMs: Math.min(60_000, this.#o.intervalMs()) }, this.#o.random), signal)
            continue
          }
        }
        await tick.sleep(this.#o.intervalMs(), signal).catch(() => undefined)
      }
    } finally {
      off()
    }
  }

  /** One `add-checkpoint` (plus one retry with the size the witness names on 409). */
  async #push(w: WitnessEndpoint, verifier: CosignerVerifier, cp: SignedCheckpoint, status: WitnessStatus, signal: AbortSignal): Promise<void> {
    const count = (result: (typeof PUSH_RESULTS)[number]): void => this.#o.metrics.inc('registry_witness_requests_total', { witness: w.name, result })
    for (let attempt = 0; attempt < 2; attempt++) {
      const old = status.cosignedSize ?? 0
      if (old > cp.treeSize) {
        count('conflict')
        throw new Error(`witness ${w.name} cosigned size ${old}, beyond this log's ${cp.treeSize}`)
      }
      const proof = old === 0 || old === cp.treeSize ? [] : this.#o.log.tree.consistencyProof(old, cp.treeSize)
      const body = `old ${old}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n${cp.note}`
      let res
      try {
        res = await this.#o.transport.request(w.url, {
          method: 'POST',
          path: '/add-checkpoint',
          headers: { 'content-type': 'text/plain; charset=utf-8', accept: 'text/plain' },
          body,
          timeoutMs: this.#o.timeoutMs(),
          signal,
          idempotent: false,
        })
      } catch (e) {
        if (signal.aborted) throw abortReason(signal)
        count('unreachable')
        throw e
      }
      const text = await readCapped(res.body, 64 * 1024)
      if (res.status === 409 && (res.headers['content-type'] ?? '').startsWith('text/x.tlog.size')) {
        const m = /^(0|[1-9][0-9]{0,15})\n$/.exec(text)
        count('conflict')
        if (m === null) throw new Error(`witness ${w.name} answered 409 without a size`)
        status.cosignedSize = Number(m[1])
        continue
      }
      if (res.status !== 200) {
        count('rejected')
        throw new Error(`witness ${w.name} answered ${res.status}: ${text.slice(0, 200)}`)
      }
      // Keep only lines that verify as this witness's cosignature of exactly this checkpoint
      // (attached unless a newer checkpoint was signed meanwhile).
      let valid = false
      for (const line of text.split('\n').filter((l) => l !== '')) {
        try {
          if (verifyCosignature(`${cp.note}${line}\n`, verifier) === undefined) continue
          valid = true
          this.#o.notary.addCosignature(cp.treeSize, w.name, `${line}\n`)
        } catch (e) {
          this.#o.logger.warn({ err: e, witness: w.name }, 'witness answered an invalid cosignature')
        }
      }
      status.cosignedSize = cp.treeSize
      if (!valid) {
        count('invalid')
        throw new Error(`witness ${w.name} answered no valid cosignature`)
      }
      delete status.error
      count('cosigned')
      return
    }
    throw new Error(`witness ${w.name} keeps naming another size`)
  }
}

function sleepUnlessAborted(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return clock.sleep(ms, signal).catch((e: unknown) => {
    if (!isRonError(e, 'Canceled') && !signal.aborted) throw e
  })
}
