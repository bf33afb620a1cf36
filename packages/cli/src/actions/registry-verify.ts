/**
 * `registry verify [--log-key <vkey>] [--witness <vkey>…] [--witness-quorum k]`: verifies a
 * node's registry log over its C2SP tiles as a client trusting nothing but the log's key — every
 * tile against the signed checkpoint, every leaf by its inclusion proof, the tree against the
 * one this client verified last (a consistency proof), and at least k witness cosignatures.
 *
 * The key is pinned in `<data-dir>/registry-pins.json` with the last size and root verified: with
 * `--log-key` omitted, the pinned key is used, and the first time the key the node announces is
 * pinned (trust on first use, said on stderr). A pinned key that differs from `--log-key` is
 * refused (exit 5): a log's key does not change.
 *
 * @module
 */

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { connectTo, output, type ClientOptions } from '../client.js'
import { defaultDataDir, errnoText } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'

/** Options of {@link registryVerifyCommand}. */
export interface RegistryVerifyArgs extends ClientOptions {
  json?: boolean | undefined
  logKey?: string | undefined
  witness?: string[] | undefined
  witnessQuorum?: number | undefined
  /** How long to wait for the witness quorum on the latest checkpoint (ms). */
  waitMs?: number | undefined
}

/** A pinned log. */
interface Pin {
  logKey: string
  treeSize: number
  /** base64, as in the checkpoint. */
  root: string
  verifiedAt: string
}

/** The pins file of this client. */
export const PINS_FILE = 'registry-pins.json'

async function readPins(file: string): Promise<Record<string, Pin>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, Pin>
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw new CliError(`cannot read ${file}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
}

async function writePins(file: string, pins: Record<string, Pin>): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.tmp`
  await writeFile(tmp, `${JSON.stringify(pins, null, 2)}\n`, { mode: 0o644 })
  await rename(tmp, file)
}

/** `registry verify`: exit 0 when the log verifies, 5 when it does not. */
export async function registryVerifyCommand(args: RegistryVerifyArgs, out: NodeJS.WritableStream, err: NodeJS.WritableStream = process.stderr): Promise<void> {
  const reg = await import('@ron/registry')
  const keyName = (vkey: string, flag: string): string => {
    try {
      return reg.parseVerifierKey(vkey).name
    } catch (e) {
      throw new CliError(`${flag} ${vkey}: ${e instanceof Error ? e.message : String(e)} (expected the log key as ron-node status prints it)`, ExitCode.Usage)
    }
  }
  for (const w of args.witness ?? []) {
    try {
      reg.parseCosignerKey(w)
    } catch (e) {
      throw new CliError(`--witness ${w}: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Usage)
    }
  }
  const pinsFile = join(args.dataDir ?? defaultDataDir({ env: args.env ?? process.env }), PINS_FILE)
  const pins = await readPins(pinsFile)
  const conn = await connectTo(args, 'registry', false)
  try {
    const client = reg.createRegistryClient(conn.transport)
    let logKey = args.logKey
    let firstUse = false
    if (logKey === undefined) {
      const head = await client.head()
      const pinned = pins[head.origin]
      if (pinned !== undefined) logKey = pinned.logKey
      else {
        logKey = head.logKey
        firstUse = true
      }
    }
    const name = keyName(logKey, '--log-key')
    const pin = pins[name]
    if (pin !== undefined && pin.logKey !== logKey) {
      throw new CliError(`the log ${name} was pinned with another key (${pin.logKey}); a log's key does not change — if you trust the new one, remove "${name}" from ${pinsFile}`, ExitCode.Integrity)
    }
    let report
    try {
      report = await reg.verifyTlog(client, {
        logKey,
        ...(args.witness === undefined ? {} : { witnesses: args.witness }),
        ...(args.witnessQuorum === undefined ? {} : { witnessQuorum: args.witnessQuorum }),
        ...(args.waitMs === undefined ? {} : { waitMs: args.waitMs }),
        ...(pin === undefined ? {} : { previous: { treeSize: pin.treeSize, root: pin.root } }),
      })
    } catch (e) {
      if (e instanceof reg.TlogVerifyError) throw new CliError(`registry log at ${conn.url} does NOT verify: ${e.message}`, ExitCode.Integrity, { cause: e })
      throw e
    }
    pins[name] = { logKey, treeSize: report.treeSize, root: report.root, verifiedAt: new Date().toISOString() }
    await writePins(pinsFile, pins)
    if (firstUse) err.write(`pinned ${name} on first use: ${logKey} (in ${pinsFile}); pass --log-key to check it against a key you got another way\n`)
    const lines = [
      `log        ${report.origin} at ${conn.url}`,
      `key        ${logKey}${firstUse ? ' (pinned now)' : pin === undefined ? '' : ' (pinned)'}`,
      `tree       ${report.treeSize} leaves, ${report.treeHash}, root ${report.root}`,
      `verified   ${report.leaves} leaves by inclusion proof${report.pruned > 0 ? `, ${report.pruned} pruned (hashes only)` : ''}, ${report.tiles} tiles`,
      ...(report.consistentWith === undefined ? [] : [`consistent with the tree of size ${report.consistentWith} verified before`]),
      ...report.cosignatures.map((c) => `witness    ${c.name} cosigned at ${new Date(c.timestamp * 1000).toISOString()}`),
      'ok',
    ]
    output(out, args.json, { ok: true, url: conn.url, logKey, pinnedNow: firstUse, ...report, checkpoint: undefined }, lines.join('\n'))
  } finally {
    await conn.close()
  }
}
