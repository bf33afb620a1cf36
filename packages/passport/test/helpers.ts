import { ALL_SCOPES, MemoryTransport, type Claims } from '@ron/core'
import { VirtualClock, metricValue as readMetric } from '@ron/core/testing'
import { createMemoryKeystore, createPassportClient, createPassportService, type Kms, type PassportServiceOptions } from '../src/index.js'

/** 2027-01-15, in ms. */
export const T0 = 1_800_000_000_000

export const ADMIN_POLICY = { callers: { admin: { scopes: ['*'], audiences: ['*'] } } }

/** A passport on a MemoryTransport with virtual time, an admin token and a client. */
export async function setup(config: PassportServiceOptions = {}) {
  const clock = new VirtualClock(T0)
  const transport = new MemoryTransport({ clock })
  const { keystore, cluster, ...data } = config
  const passport = await createPassportService({ policy: ADMIN_POLICY, drainReadWindowMs: 0, ...data }, transport, { clock, ...(keystore === undefined ? {} : { keystore }), ...(cluster === undefined ? {} : { cluster }) })
  transport.mount('passport', passport)
  const admin = await passport.mintAdminToken({ aud: ['passport', 'storage', 'registry', 'index', 'interop'], scope: [...ALL_SCOPES], ttlSec: 30 * 86400 })
  const client = createPassportClient(transport, { token: admin.token })
  const close = async (): Promise<void> => {
    await passport.close()
    await transport.close()
  }
  return { clock, transport, passport, admin, client, close }
}

/** The claims segment of a compact JWS. */
export function payloadOf(token: string): Claims & { scope: string } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Claims & { scope: string }
}

/** The header of a compact JWS. */
export function headerOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as Record<string, unknown>
}

/** Catches a rejection (fails when `p` resolves). */
export async function rejection(p: Promise<unknown>): Promise<{ code: string; status: number; details: Record<string, unknown>; message: string }> {
  try {
    await p
  } catch (e) {
    return e as { code: string; status: number; details: Record<string, unknown>; message: string }
  }
  throw new Error('expected a rejection')
}

/** A memory keystore whose `sign` can be held (stalled) or made to fail. */
export function controllableKms(): Kms & { hold(): void; release(): void; fail: boolean; held: number } {
  const inner = createMemoryKeystore()
  let gate: { promise: Promise<void>; resolve: () => void } | undefined
  // Counted in a closure, read through a getter.
  let held = 0
  const k = {
    ...inner,
    fail: false,
    /** Sign calls waiting at the gate. */
    get held() {
      return held
    },
    hold() {
      let resolve!: () => void
      const promise = new Promise<void>((r) => (resolve = r))
      gate = { promise, resolve }
    },
    release() {
      gate?.resolve()
      gate = undefined
    },
    async sign(kid: string, data: Uint8Array, signal: AbortSignal) {
      // A stalled KMS that ignores its signal: the guard's deadline must still hold.
      if (gate !== undefined) {
        held++
        await gate.promise
        held--
      }
      if (k.fail) throw new Error('hsm unplugged')
      return inner.sign(kid, data, signal)
    },
  }
  return k
}

export { until } from '@ron/core/testing'

/** The value of one series of `svc`'s metrics (a histogram: its `_count`); 0 when absent. */
export async function metricValue(svc: { metricsText(): Promise<string> }, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await svc.metricsText()
  return readMetric(text, name, labels) ?? readMetric(text, `${name}_count`, labels) ?? 0
}
