/**
 * `ron-node get <address> [-o file]`: streams an object to a file (atomically, verified) or stdout.
 * It reads through the node's gateway (interop's `GET /o/:addr`), so any node of a cluster serves
 * it: the node's own copy, or one it fetches and verifies from another node (SPEC §6a). A node
 * without interop is read from its storage (its own copies only).
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { IntegrityFailedError, createBlake3, isRonError, parseAddress, toAddress, type Address } from '@ron/core/client'
import { connectStorage, discoverService, resolveNodeUrl, resolveToken, type ClientOptions } from '../client.js'
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

/** Where `get` reads: the node's interop (its gateway reads from any node), else its storage. */
async function readUrl(nodeUrl: string): Promise<string> {
  try {
    return await discoverService(nodeUrl, 'interop')
  } catch (e) {
    if (e instanceof CliError && e.exitCode === ExitCode.NotFound) return discoverService(nodeUrl, 'storage')
    throw e
  }
}

/** True for the errors a closed or broken stdout raises. */
function isStdoutError(e: unknown): e is Error {
  const code = (e as { code?: unknown } | null)?.code
  return e instanceof Error && (code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_WRITE_AFTER_END')
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
 * On stdout, bytes are written as they arrive and a mismatch is reported at the end (exit 5); when
 * the reader closes stdout early (EPIPE, e.g. `| head`) the download stops and the command
 * succeeds quietly, without verifying the rest.
 *
 * @throws {@link IntegrityFailedError} when the content does not match its address.
 */
export async function getCommand(args: GetArgs, stdout: NodeJS.WritableStream = process.stdout): Promise<GetOutcome> {
  const address = parseAddress(args.address, 'address')
  const { token } = await resolveToken(args)
  const conn = connectStorage(await readUrl(resolveNodeUrl(args)), token)
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
      const out = createWriteStream(tmp, { flags: 'wx', mode: 0o644 })
      try {
        await pipeline(verified(), out)
      } catch (e) {
        // pipeline can reject while the file's open is still under way; it would then be created
        // after the cleanup below removed its name. Wait until the stream has closed its file.
        if (!out.closed) await once(out, 'close')
        const code = (e as { code?: unknown }).code
        if (!isRonError(e) && typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
          throw new CliError(`cannot write ${target}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
        }
        throw e
      }
      await rename(tmp, target)
    } else {
      // Not closing stdout: the process may still print to it. A reader that goes away early
      // (`ron-node get b3:… | head`) makes stdout fail with EPIPE: like other Unix tools, stop
      // quietly and succeed; any other stdout error is one line (exit 1).
      let stdoutError: Error | undefined
      let failWrite: ((e: Error) => void) | undefined
      const onStdoutError = (e: Error): void => {
        stdoutError ??= e
        failWrite?.(e)
      }
      stdout.on('error', onStdoutError)
      try {
        await pipeline(
          verified(),
          new Writable({
            write: (chunk: Buffer, _enc, cb) => {
              if (stdoutError !== undefined) return cb(stdoutError)
              let settled = false
              const done = (e?: Error): void => {
                if (settled) return
                settled = true
                failWrite = undefined
                stdout.off('drain', onDrain)
                cb(e)
              }
              const onDrain = (): void => done()
              failWrite = done
              if (stdout.write(chunk)) done()
              else stdout.once('drain', onDrain)
            },
          }),
        )
      } catch (e) {
        const broken = stdoutError ?? (isStdoutError(e) ? e : undefined)
        if (broken === undefined) throw e
        progress.clear()
        if ((broken as { code?: unknown }).code === 'EPIPE') return { address, size, path: undefined }
        throw new CliError(`cannot write to stdout: ${errnoText(broken)}`, ExitCode.Error, { cause: broken })
      } finally {
        stdout.off('error', onStdoutError)
      }
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
