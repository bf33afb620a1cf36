/**
 * `ron-node put <file|->`: streams a file or stdin to storage and prints its address.
 *
 * @module
 */

import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { parseAddress, type Address } from '@ron/core/client'
import { connectStorage, discoverService, noTokenError, precheckToken, resolveNodeUrl, resolveToken, type ClientOptions } from '../client.js'
import { errnoText } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { createProgress, type Progress } from '../progress.js'

/** Arguments of {@link putCommand}. */
export interface PutArgs extends ClientOptions {
  /** Path of the file, or `-` for stdin. */
  file: string
  /** Fail (exit 5) unless the content hashes to this address. */
  expect?: string | undefined
  /** Print `{"address","size"}` instead of the bare address. */
  json?: boolean | undefined
  /** Force the progress bar on or off. @default stderr is a TTY */
  progress?: boolean | undefined
}

/** What {@link putCommand} produced. */
export interface PutOutcome {
  address: Address
  size: number
  created: boolean
}

async function* counted(source: AsyncIterable<Uint8Array>, progress: Progress): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    progress.tick(chunk.byteLength)
    yield chunk
  }
}

/**
 * Uploads the file and writes the address (or the JSON line) to `out`.
 * @throws {@link CliError} when the file cannot be read or no token is available; RON errors from
 *   the node (mapped to exit codes by the caller).
 */
export async function putCommand(args: PutArgs, out: NodeJS.WritableStream = process.stdout): Promise<PutOutcome> {
  const expect = args.expect === undefined ? undefined : parseAddress(args.expect, 'expect')
  // The node first: against a stopped node the answer is "not running", not "no token".
  const nodeUrl = resolveNodeUrl(args)
  const storageUrl = await discoverService(nodeUrl, 'storage')
  const { token, tokenFile } = await resolveToken(args)
  if (token === undefined) throw noTokenError(nodeUrl, tokenFile)
  precheckToken(token, 'storage:write')
  let total: number | undefined
  let source: AsyncIterable<Uint8Array>
  if (args.file === '-') {
    source = process.stdin
  } else {
    try {
      const st = await stat(args.file)
      if (!st.isFile()) throw new CliError(`${args.file} is not a regular file`, ExitCode.Error)
      total = st.size
    } catch (e) {
      if (e instanceof CliError) throw e
      throw new CliError(`cannot read ${args.file}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
    }
    source = createReadStream(args.file, { highWaterMark: 256 * 1024 })
  }
  const progress = createProgress({ label: 'put', ...(total === undefined ? {} : { total }), ...(args.progress === undefined ? {} : { enabled: args.progress }) })
  const conn = connectStorage(storageUrl, token)
  try {
    const res = await conn.client.put(counted(source, progress), { ...(expect === undefined ? {} : { expect }), ...(total === undefined ? {} : { size: total }) })
    progress.done()
    out.write(args.json === true ? `${JSON.stringify({ address: res.address, size: res.size })}\n` : `${res.address}\n`)
    return { address: res.address, size: res.size, created: res.created }
  } catch (e) {
    progress.clear()
    throw e
  } finally {
    await conn.close()
  }
}
