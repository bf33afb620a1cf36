/**
 * `ron-node get <address> [-o file]`: streams an object to a file (atomically, verified) or stdout.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { IntegrityFailedError, createBlake3, isRonError, parseAddress, toAddress, type Address } from '@ron/core'
import { connectStorage, resolveNodeUrl, resolveToken, type ClientOptions } from '../client.js'
import { errnoText } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { createProgress } from '../progress.js'

/** Arguments of {@link getCommand}. */
export interface GetArgs extends ClientOptions {
  /** The `b3:` address to fetch. */
  address: string
  /** Output file; absent or `-` → stdout. */
  output?: string | undefined
  /** Force the progress bar on or off. @default stderr is a TTY */
  progress?: boolean | undefined
}

/** What {@link getCommand} produced. */
export interface GetOutcome {
  address: Address
  size: number
  /** Absolute output path, or undefined for stdout. */
  path: string | undefined
}

/**
 * Fetches the object and writes it out, hashing every byte on the way. With `-o`, bytes go to a
 * temporary file beside the target, which is renamed into place only once the whole content
 * hashes to the address; on any failure the temporary file is removed and the target is untouched.
 * On stdout, bytes are written as they arrive and a mismatch is reported at the end (exit 5).
 *
 * @throws {@link IntegrityFailedError} when the content does not match its address.
 */
export async function getCommand(args: GetArgs, stdout: NodeJS.WritableStream = process.stdout): Promise<GetOutcome> {
  const address = parseAddress(args.address, 'address')
  const nodeUrl = resolveNodeUrl(args)
  const { token } = await resolveToken(args)
  const conn = connectStorage(nodeUrl, token)
  const toFile = args.output !== undefined && args.output !== '-'
  const target = toFile ? resolve(args.output!) : undefined
  const tmp = target === undefined ? undefined : join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.ron-tmp`)
  let progress = createProgress({ label: 'get', enabled: false })
  try {
    const obj = await conn.client.get(address)
    progress = createProgress({ label: 'get', total: obj.size, ...(args.progress === undefined ? {} : { enabled: args.progress }) })
    const hasher = createBlake3()
    let size = 0
    const p = progress
    async function* verified(): AsyncGenerator<Uint8Array> {
      for await (const chunk of obj.body) {
        hasher.update(chunk)
        size += chunk.byteLength
        p.tick(chunk.byteLength)
        yield chunk
      }
      const actual = toAddress(hasher.digest())
      if (actual !== address) throw new IntegrityFailedError(`content of ${address} hashes to ${actual}`, { details: { expected: address, actual } })
    }
    if (tmp !== undefined && target !== undefined) {
      try {
        await pipeline(verified(), createWriteStream(tmp, { flags: 'wx', mode: 0o644 }))
      } catch (e) {
        const code = (e as { code?: unknown }).code
        if (!isRonError(e) && typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
          throw new CliError(`cannot write ${target}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
        }
        throw e
      }
      await rename(tmp, target)
    } else {
      // Not closing stdout: the process may still print to it.
      await pipeline(verified(), new Writable({ write: (chunk: Buffer, _enc, cb) => (stdout.write(chunk) ? cb() : stdout.once('drain', () => cb())) }))
    }
    progress.done()
    return { address, size, path: target }
  } catch (e) {
    progress.clear()
    throw e
  } finally {
    if (tmp !== undefined) await rm(tmp, { force: true })
    await conn.close()
  }
}
