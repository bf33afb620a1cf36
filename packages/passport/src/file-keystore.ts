/**
 * The default keystore: one private JWK per file (`exportIssuerKey` format), mode 0600, written
 * atomically (temporary file, fsync, rename, directory fsync) in a directory of the data dir.
 *
 * @module
 */

import { createHash, randomBytes, sign } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { NotFoundError, abortReason, exportIssuerKey, generateIssuerKey, importIssuerKey, type IssuerKey } from '@ron/core'
import type { Kms, KmsKey } from './kms.js'

/** Options of {@link createFileKeystore}. */
export interface FileKeystoreOptions {
  /** Directory holding the key files (created 0700 when missing). */
  dir: string
}

const fileOf = (kid: string): string => `${createHash('sha256').update(kid).digest('hex').slice(0, 32)}.jwk.json`

/**
 * Writes `text` to `path` atomically with mode 0600: a temporary file in the same directory is
 * written and fsynced, renamed over `path`, and the directory is fsynced.
 */
export async function writeFileAtomic(path: string, text: string, dir: string): Promise<void> {
  // Unique per call: two writes of the same file at once must not collide on the temporary name.
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx', 0o600)
  try {
    try {
      await fh.writeFile(text)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
  } catch (e) {
    // A full or failing disk: the half-written temporary file must not stay and hold space.
    await rm(tmp, { force: true }).catch(() => undefined)
    throw e
  }
  const d = await open(dir, 'r')
  try {
    await d.sync()
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  } finally {
    await d.close()
  }
}

/**
 * A {@link Kms} over private key files in `dir`. Keys are loaded once and cached; signing
 * happens in process with `node:crypto`.
 *
 * @example
 * ```ts
 * const keystore = createFileKeystore({ dir: './data/passport/keys' })
 * ```
 */
export function createFileKeystore(options: FileKeystoreOptions): Kms {
  const { dir } = options
  const cache = new Map<string, IssuerKey>()
  let loaded: Promise<void> | undefined
  const info = (k: IssuerKey): KmsKey => ({ kid: k.kid, publicJwk: { ...k.publicJwk } })

  async function load(): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o700 })
    for (const name of await readdir(dir)) {
      if (!name.endsWith('.jwk.json')) continue
      const k = importIssuerKey(await readFile(join(dir, name), 'utf8'))
      cache.set(k.kid, k)
    }
  }
  const ready = (signal: AbortSignal): Promise<void> => {
    if (signal.aborted) return Promise.reject(abortReason(signal))
    loaded ??= load().catch((e: unknown) => {
      loaded = undefined
      throw e
    })
    return loaded
  }
  async function store(k: IssuerKey): Promise<KmsKey> {
    await writeFileAtomic(join(dir, fileOf(k.kid)), exportIssuerKey(k), dir)
    cache.set(k.kid, k)
    return info(k)
  }

  return {
    async generate(epoch, signal) {
      await ready(signal)
      return store(generateIssuerKey({ epoch }))
    },
    async import(key, signal) {
      await ready(signal)
      if (cache.has(key.kid)) return info(cache.get(key.kid)!)
      return store(key)
    },
    async sign(kid, data, signal) {
      await ready(signal)
      const k = cache.get(kid)
      if (k === undefined) throw new NotFoundError(`no key ${kid}`, { details: { kid } })
      return sign(null, data, k.privateKey)
    },
    async list(signal) {
      await ready(signal)
      return [...cache.values()].map(info)
    },
    async destroy(kid, signal) {
      await ready(signal)
      cache.delete(kid)
      await rm(join(dir, fileOf(kid)), { force: true })
    },
  }
}
