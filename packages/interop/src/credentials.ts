/**
 * The webhook secrets and API keys interop accepts, changed at run time by the admin routes
 * (`interop:admin`, SPEC §5) without a restart. Two layers: the config's (`webhooks.providers`,
 * `apiKeys`, swapped on reload) and the admin's, which wins for every provider or client it has
 * touched. A rotation puts the new secret or key first and keeps the ones it replaces accepted
 * until the overlap ends (on the injected clock), then refuses them.
 *
 * With a `dataDir` the admin layer is kept durably in `admin-credentials.json` (0600; temporary
 * file, fsync, rename, directory fsync) before a change is answered, so a restart keeps what was
 * acknowledged. Webhook secrets are HMAC keys and must be kept as they are; API keys only as their
 * SHA-256. Nothing here is ever logged, counted or answered with a secret in it: what leaves is
 * an id (`cfg:<n>`, or random for admin-set ones) and an expiry.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { hasErrnoCode, toDiskFault, type Clock } from '@ron/core'
import type { InteropConfig } from './config.js'
import type { ApiKeyClient } from './routes/context.js'
import type { WebhookProvider } from './webhooks/verify.js'

/** One webhook secret: its public id, the secret and when it stops being accepted (ms; none: current). */
interface SecretEntry {
  id: string
  secret: string
  notAfter?: number
}

/** One API key: its public id, `sha256:` hex hash, upload cap and expiry. */
interface KeyEntry {
  id: string
  keyHash: string
  maxBytes?: number
  notAfter?: number
}

/** The admin layer, as persisted. */
interface AdminLayer {
  providers: Partial<Record<WebhookProvider, SecretEntry[]>>
  clients: Record<string, KeyEntry[]>
}

/** What the admin routes show of a secret or key: never the value. */
export interface CredentialSummary {
  id: string
  source: 'config' | 'admin'
  /** When it stops being accepted (epoch ms), for a replaced one in its overlap. */
  expiresAt?: number
}

/** The answer of a rotation: the new id and the ones still accepted until their overlap ends. */
export interface RotationResult {
  id: string
  previous: CredentialSummary[]
}

const FILE = 'admin-credentials.json'

/** The admin-managed credentials over the config's, with rotation overlaps. */
export class Credentials {
  readonly #clock: Clock
  readonly #dir: string | undefined
  #config: InteropConfig
  #admin: AdminLayer
  /** Serialises changes (each persisted before the next starts). */
  #chain: Promise<unknown> = Promise.resolve()
  // Active views, recomputed when a change happens or the earliest overlap ends (the hot path
  // reads them per request without allocating).
  #secrets = new Map<string, readonly string[]>()
  #clients: readonly ApiKeyClient[] = []
  #nextExpiry = Infinity

  private constructor(config: InteropConfig, clock: Clock, dir: string | undefined, admin: AdminLayer) {
    this.#config = config
    this.#clock = clock
    this.#dir = dir
    this.#admin = admin
    this.#recompute()
  }

  /**
   * Opens the credentials of `config`, with the admin layer persisted under `dataDir` (when given).
   * @throws `NotReadyError` (503, a disk fault) when the file cannot be read; `Error` when it is not valid JSON
   */
  static async open(config: InteropConfig, clock: Clock, dataDir?: string): Promise<Credentials> {
    let admin: AdminLayer = { providers: {}, clients: {} }
    if (dataDir !== undefined) {
      try {
        admin = JSON.parse(await readFile(join(dataDir, FILE), 'utf8')) as AdminLayer
      } catch (e) {
        if (!hasErrnoCode(e, 'ENOENT')) throw toDiskFault(e, 'interop admin credentials')
      }
    }
    return new Credentials(config, clock, dataDir, admin)
  }

  /** Swaps in a reloaded config: its secrets and keys apply where the admin layer has none. */
  setConfig(config: InteropConfig): void {
    this.#config = config
    this.#recompute()
  }

  /** The secrets `provider` accepts now, newest first; undefined when the provider is not enabled. */
  secrets(provider: WebhookProvider): readonly string[] | undefined {
    this.#expire()
    return this.#secrets.get(provider)
  }

  /** The API-key clients accepted now. */
  clients(): readonly ApiKeyClient[] {
    this.#expire()
    return this.#clients
  }

  /** The secrets of every enabled provider and the keys of every client, as ids and expiries. */
  summary(): { providers: Record<string, CredentialSummary[]>; apiKeys: Record<string, CredentialSummary[]> } {
    this.#expire()
    const now = this.#clock.now()
    const providers: Record<string, CredentialSummary[]> = {}
    for (const p of Object.keys({ ...this.#config.webhooks.providers, ...this.#admin.providers }) as WebhookProvider[]) {
      const list = this.#secretEntries(p, now)
      if (list.length > 0) providers[p] = list.map(({ entry, source }) => summaryOf(entry, source))
    }
    const apiKeys: Record<string, CredentialSummary[]> = {}
    for (const c of this.#clientNames()) {
      const list = this.#keyEntries(c, now)
      if (list.length > 0) apiKeys[c] = list.map(({ entry, source }) => summaryOf(entry, source))
    }
    return { providers, apiKeys }
  }

  /**
   * Makes `secret` the current secret of `provider`; the ones it replaces stay accepted for
   * `overlapMs`. Resolves once the change is durable (with a `dataDir`).
   * @throws `NotReadyError` (503, `details.reason` a disk fault) when it cannot be persisted; nothing changes then
   */
  rotateSecret(provider: WebhookProvider, secret: string, overlapMs: number): Promise<RotationResult> {
    return this.#change((admin, now) => {
      const previous = this.#secretEntries(provider, now).map(({ entry }) => ({ ...entry, notAfter: Math.min(entry.notAfter ?? Infinity, now + overlapMs) }))
      const id = newId('s')
      admin.providers[provider] = [{ id, secret }, ...previous.filter((e) => e.notAfter > now)]
      return { id, previous: previous.filter((e) => e.notAfter > now).map((e) => summaryOf(e, 'admin')) }
    })
  }

  /**
   * Makes `keyHash` the current API key of `client`; the keys it replaces stay accepted for
   * `overlapMs`. Resolves once the change is durable (with a `dataDir`).
   * @throws `NotReadyError` (503, a disk fault) when it cannot be persisted; nothing changes then
   */
  rotateApiKey(client: string, keyHash: string, maxBytes: number | undefined, overlapMs: number): Promise<RotationResult> {
    return this.#change((admin, now) => {
      const previous = this.#keyEntries(client, now).map(({ entry }) => ({ ...entry, notAfter: Math.min(entry.notAfter ?? Infinity, now + overlapMs) }))
      const id = newId('k')
      admin.clients[client] = [{ id, keyHash, ...(maxBytes === undefined ? {} : { maxBytes }) }, ...previous.filter((e) => e.notAfter > now)]
      return { id, previous: previous.filter((e) => e.notAfter > now).map((e) => summaryOf(e, 'admin')) }
    })
  }

  /**
   * Refuses every key of `client` at once (also the configured ones, until the admin sets one again).
   * @returns how many keys were accepted before
   */
  removeApiKeys(client: string): Promise<number> {
    return this.#change((admin, now) => {
      const before = this.#keyEntries(client, now).length
      admin.clients[client] = []
      return before
    })
  }

  /** Applies `fn` to a copy of the admin layer, persists it, then swaps it in (one change at a time). */
  #change<T>(fn: (admin: AdminLayer, now: number) => T): Promise<T> {
    const run = async (): Promise<T> => {
      const next: AdminLayer = structuredClone(this.#admin)
      const out = fn(next, this.#clock.now())
      await this.#persist(next)
      this.#admin = next
      this.#recompute()
      return out
    }
    const p = this.#chain.then(run, run)
    this.#chain = p.catch(() => undefined)
    return p
  }

  async #persist(admin: AdminLayer): Promise<void> {
    if (this.#dir === undefined) return
    try {
      await mkdir(this.#dir, { recursive: true })
      const path = join(this.#dir, FILE)
      const tmp = `${path}.tmp`
      const out = await open(tmp, 'w', 0o600)
      try {
        await out.writeFile(JSON.stringify(admin))
        await out.sync()
      } finally {
        await out.close()
      }
      await rename(tmp, path)
      const d = await open(this.#dir, 'r')
      try {
        await d.sync()
      } finally {
        await d.close()
      }
    } catch (e) {
      throw toDiskFault(e, 'interop admin credentials')
    }
  }

  #secretEntries(p: WebhookProvider, now: number): { entry: SecretEntry; source: 'config' | 'admin' }[] {
    const own = this.#admin.providers[p]
    if (own !== undefined) return own.filter((e) => e.notAfter === undefined || e.notAfter > now).map((entry) => ({ entry, source: 'admin' as const }))
    return (this.#config.webhooks.providers[p]?.secrets ?? []).map((secret, i) => ({ entry: { id: `cfg:${i}`, secret }, source: 'config' as const }))
  }

  #keyEntries(client: string, now: number): { entry: KeyEntry; source: 'config' | 'admin' }[] {
    const own = this.#admin.clients[client]
    if (own !== undefined) return own.filter((e) => e.notAfter === undefined || e.notAfter > now).map((entry) => ({ entry, source: 'admin' as const }))
    const out: { entry: KeyEntry; source: 'config' }[] = []
    this.#config.apiKeys.forEach((k, i) => {
      if (k.client === client) out.push({ entry: { id: `cfg:${i}`, keyHash: k.keyHash, ...(k.maxBytes === undefined ? {} : { maxBytes: k.maxBytes }) }, source: 'config' })
    })
    return out
  }

  #clientNames(): string[] {
    return [...new Set([...this.#config.apiKeys.map((k) => k.client), ...Object.keys(this.#admin.clients)])]
  }

  #expire(): void {
    if (this.#clock.now() >= this.#nextExpiry) this.#recompute()
  }

  #recompute(): void {
    const now = this.#clock.now()
    let next = Infinity
    const secrets = new Map<string, readonly string[]>()
    for (const p of Object.keys({ ...this.#config.webhooks.providers, ...this.#admin.providers }) as WebhookProvider[]) {
      const list = this.#secretEntries(p, now)
      for (const { entry } of list) if (entry.notAfter !== undefined) next = Math.min(next, entry.notAfter)
      if (list.length > 0) secrets.set(p, list.map(({ entry }) => entry.secret))
    }
    const clients: ApiKeyClient[] = []
    for (const c of this.#clientNames()) {
      for (const { entry } of this.#keyEntries(c, now)) {
        if (entry.notAfter !== undefined) next = Math.min(next, entry.notAfter)
        clients.push({ hash: Buffer.from(entry.keyHash.slice('sha256:'.length), 'hex'), client: c, maxBytes: entry.maxBytes })
      }
    }
    this.#secrets = secrets
    this.#clients = clients
    this.#nextExpiry = next
  }
}

function summaryOf(e: { id: string; notAfter?: number }, source: 'config' | 'admin'): CredentialSummary {
  return { id: e.id, source, ...(e.notAfter === undefined ? {} : { expiresAt: e.notAfter }) }
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`
}
