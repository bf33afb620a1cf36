/**
 * Registry commands: `registry propose|approve|commit|head|watch|fsck`, `webhook test` and `receipt verify`.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { connectTo, output, type ClientOptions } from '../client.js'
import { defaultDataDir, errnoText, processAlive } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'

/** Options shared by these commands. */
export interface RegistryArgs extends ClientOptions {
  json?: boolean | undefined
}

async function registry(args: RegistryArgs, needToken: boolean): Promise<{ client: import('@ron/registry').RegistryClient; close(): Promise<void> }> {
  const { createRegistryClient } = await import('@ron/registry')
  const conn = await connectTo(args, 'registry', needToken)
  return { client: createRegistryClient(conn.transport, conn.token === undefined ? {} : { token: conn.token }), close: () => conn.close() }
}

async function readInput(file: string): Promise<string> {
  try {
    if (file === '-') {
      const chunks: Buffer[] = []
      for await (const c of process.stdin) chunks.push(c as Buffer)
      return Buffer.concat(chunks).toString('utf8')
    }
    return await readFile(file, 'utf8')
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
}

/** `registry propose <file|->`: proposes a descriptor set (JSON) (scope `registry:propose`). */
export async function registryProposeCommand(args: RegistryArgs & { file: string }, out: NodeJS.WritableStream): Promise<void> {
  let payload: unknown
  try {
    payload = JSON.parse(await readInput(args.file))
  } catch (e) {
    if (e instanceof CliError) throw e
    throw new CliError(`${args.file} is not JSON (expected a descriptor set {"schemaVersion":1,"items":[…]})`, ExitCode.Usage, { cause: e })
  }
  const r = await registry(args, true)
  try {
    const p = await r.client.propose(payload as never)
    output(out, args.json, p, `proposal ${p.proposalId}  payload ${p.payloadB3}  base ${p.baseVersion}`)
  } finally {
    await r.close()
  }
}

/**
 * `registry approve <proposalId> [--key file]`: signs the proposal with a registry signer key,
 * by default the node's own (`<data-dir>/registry/registry-signer.key`) (scope `registry:approve`).
 */
export async function registryApproveCommand(args: RegistryArgs & { proposalId: string; key?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const { importSignerKey } = await import('@ron/registry')
  const keyFile = args.key ?? join(args.dataDir ?? defaultDataDir({ env: args.env ?? process.env }), 'registry', 'registry-signer.key')
  let key: ReturnType<typeof importSignerKey>
  try {
    key = importSignerKey(await readFile(keyFile, 'utf8'))
  } catch (e) {
    throw new CliError(`cannot use signer key ${keyFile}: ${errnoText(e)}; pass --key with a registry signer key file`, ExitCode.Error, { cause: e })
  }
  const r = await registry(args, true)
  try {
    const a = await r.client.approveWith(args.proposalId, key)
    output(out, args.json, a, `approved ${args.proposalId} as ${key.id}: ${JSON.stringify(a)}`)
  } finally {
    await r.close()
  }
}

/** `registry commit <proposalId>` (scope `registry:commit`). */
export async function registryCommitCommand(args: RegistryArgs & { proposalId: string }, out: NodeJS.WritableStream): Promise<void> {
  const r = await registry(args, true)
  try {
    const c = await r.client.commit(args.proposalId)
    output(out, args.json, c, `committed version ${c.version}  ${c.hash}`)
  } finally {
    await r.close()
  }
}

/** `registry head`: the current version, hash and tree. */
export async function registryHeadCommand(args: RegistryArgs, out: NodeJS.WritableStream): Promise<void> {
  const r = await registry(args, false)
  try {
    const h = await r.client.head()
    output(out, args.json, h, `version ${h.version}  ${h.hash}  tree ${h.treeSize} (${h.treeHash})  origin ${h.origin}`)
  } finally {
    await r.close()
  }
}

/** `registry watch [--from version]`: prints every commit as it happens, until interrupted or `--count` commits. */
export async function registryWatchCommand(args: RegistryArgs & { from?: number | undefined; count?: number | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const r = await registry(args, false)
  const ac = new AbortController()
  const stop = (): void => ac.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  let seen = 0
  try {
    for await (const u of r.client.watch({ signal: ac.signal, ...(args.from === undefined ? {} : { lastEventId: args.from }) })) {
      output(out, args.json, u, `version ${u.version}  ${u.hash}  payload ${u.b3}`)
      if (args.count !== undefined && ++seen >= args.count) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
    await r.close()
  }
}

/** Options of `registry fsck`. */
export interface RegistryFsckArgs extends RegistryArgs {
  /** The registry directory. @default `<data-dir>/registry` */
  dir?: string | undefined
  /** Make the repairs a start would make (cut what was never acknowledged), and only those. */
  repair?: boolean | undefined
  /** Write a head record for a log without a usable one (a log from before head records). */
  rebuildHead?: boolean | undefined
}

/**
 * `registry fsck [--dir] [--repair] [--rebuild-head]`: verifies the node's registry log on disk,
 * read-only, and says what the head record (`head.bin`) records as acknowledged and what is
 * missing; exit 5 on problems. `--repair` makes the repairs a start makes — cutting a torn record
 * past the head record, which was never acknowledged — and refuses (writing nothing) when
 * acknowledged entries or their evidence are missing. `--rebuild-head` writes a head record for
 * the log as it is (only when nothing else is wrong).
 */
export async function registryFsckCommand(args: RegistryFsckArgs, out: NodeJS.WritableStream): Promise<void> {
  const { verifyLog, repairLog } = await import('@ron/registry')
  const dir = args.dir ?? join(args.dataDir ?? defaultDataDir({ env: args.env ?? process.env }), 'registry')
  const rebuildHead = args.rebuildHead === true
  const writes = args.repair === true || rebuildHead
  if (writes) await refuseWhileRunning(dir)
  const report = await verifyLog(dir, { rebuildHead })
  const lines = fsckLines(dir, report)
  let repaired: Record<string, number> | undefined
  if (writes && report.ok && report.warnings.length > 0) {
    repaired = (await repairLog(dir, { rebuildHead })).repaired
    const after = await verifyLog(dir)
    lines.push(...Object.entries(repaired).map(([kind, n]) => `repaired   ${kind} × ${n}`))
    if (!after.ok) {
      lines.push(...after.problems.map((p) => `PROBLEM    ${p}`))
      output(out, args.json, { ...after, repaired }, lines.join('\n'))
      throw new CliError(`registry log ${dir} failed verification after the repair`, ExitCode.Integrity)
    }
    lines.push('ok (repaired)')
  } else if (report.ok) {
    lines.push(report.warnings.length === 0 ? 'ok' : 'ok; a start makes the repairs above, or run `ron-node registry fsck --repair` to make them now')
  } else {
    const headLost = report.headRecord === undefined && report.problems.some((p) => p.startsWith('head.bin'))
    lines.push(
      `the log is damaged: acknowledged entries, or the evidence of them, are missing or rewritten (see above). ${writes ? 'Nothing was changed: ' : ''}--repair only removes what was never acknowledged and cannot fix this; restore the registry directory from a backup${headLost ? ', or, only if this log was written by a release without head records, run `ron-node registry fsck --rebuild-head`' : ''}`,
    )
  }
  output(out, args.json, repaired === undefined ? report : { ...report, repaired }, lines.join('\n'))
  if (!report.ok) throw new CliError(`registry log ${dir} failed verification`, ExitCode.Integrity)
}

/** The human-readable report of `registry fsck`. */
function fsckLines(dir: string, report: import('@ron/registry').VerifyLogReport): string[] {
  const h = report.headRecord
  return [
    `log        ${dir}`,
    `origin     ${report.origin}`,
    `head       ${report.head} (oldest ${report.oldest}, ${report.entries} entries, ${report.checkpoints} checkpoints)`,
    h === undefined
      ? 'recorded   head.bin: none'
      : `recorded   head.bin: version ${h.version} ${h.hash} (oldest ${h.oldest}, ${h.checkpoints} checkpoints in ${h.checkpointBytes} bytes, ${h.leaves} durable leaf hashes, write ${h.seq})`,
    `root       ${report.root}`,
    ...report.warnings.map((w) => `warning    ${w}`),
    ...report.problems.map((p) => `PROBLEM    ${p}`),
  ]
}

/** Refuses to change a registry directory whose node is running (its lock file names a live process). */
async function refuseWhileRunning(dir: string): Promise<void> {
  let pid: number
  try {
    pid = Number.parseInt((await readFile(join(dirname(dir), 'lock'), 'utf8')).trim(), 10)
  } catch {
    return
  }
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
    throw new CliError(`the node using ${dirname(dir)} is running (pid ${pid}); stop it before repairing its registry log`, ExitCode.Error)
  }
}

/** The node's webhook secrets (`<data-dir>/interop/webhook-secrets.json`), by provider. */
async function nodeWebhookSecrets(args: RegistryArgs): Promise<{ file: string; secrets: Record<string, string> }> {
  const file = join(args.dataDir ?? defaultDataDir({ env: args.env ?? process.env }), 'interop', 'webhook-secrets.json')
  try {
    return { file, secrets: JSON.parse(await readFile(file, 'utf8')) as Record<string, string> }
  } catch (e) {
    throw new CliError(`cannot read the node's webhook secrets ${file}: ${errnoText(e)}; pass --secret`, ExitCode.Error, { cause: e })
  }
}

/**
 * `receipt verify <address>`: fetches a stored webhook receipt from storage and recomputes its
 * signature over the stored body and headers with the provider's secret (`--secret`, or the
 * node's). No replay window applies: a receipt is old by design. Exit 5 when it does not verify.
 */
export async function receiptVerifyCommand(args: RegistryArgs & { address: string; secret?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const secrets = args.secret === undefined ? (await nodeWebhookSecrets(args)).secrets : undefined
  const { fetchAndVerifyReceipt } = await import('@ron/interop')
  const conn = await connectTo(args, 'storage', false)
  try {
    const r = await fetchAndVerifyReceipt(conn.transport, 'storage', args.address, (provider) => {
      const s = args.secret ?? secrets?.[provider]
      return s === undefined ? [] : [s]
    }, conn.token === undefined ? {} : { token: conn.token })
    const head = `${r.receipt.provider} delivery ${r.receipt.deliveryId}, body ${r.receipt.bodyB3} (${r.receipt.bodySize} bytes)`
    output(out, args.json, r, r.ok ? `verified: ${head}` : `NOT verified (${r.reason}): ${head}`)
    if (!r.ok) throw new CliError(`receipt ${args.address} does not verify: ${r.message}`, ExitCode.Integrity)
  } finally {
    await conn.close()
  }
}

/**
 * `webhook test <provider>`: sends a signed test delivery to the node's interop, with the node's
 * secret for that provider (`<data-dir>/interop/webhook-secrets.json`) or `--secret`.
 */
export async function webhookTestCommand(args: RegistryArgs & { provider: string; secret?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  let secret = args.secret
  if (secret === undefined) {
    const { file, secrets } = await nodeWebhookSecrets(args)
    secret = secrets[args.provider]
    if (secret === undefined) throw new CliError(`no secret for ${args.provider} in ${file}; pass --secret`, ExitCode.Usage)
  }
  const { createInteropClient } = await import('@ron/interop')
  const conn = await connectTo({ ...args, token: undefined }, 'interop', false)
  try {
    const ack = await createInteropClient(conn.transport).sendTestWebhook(args.provider as never, secret)
    output(out, args.json, ack, `accepted; receipt ${ack.receipt}${ack.deliveryId === undefined ? '' : ` (delivery ${ack.deliveryId})`}`)
  } finally {
    await conn.close()
  }
}
