/**
 * `ron-node registry propose|approve|commit|head|verify|watch|fsck`: the signed, append-only
 * registry log (the work: `actions/registry.ts`, `actions/registry-verify.ts`).
 *
 * @module
 */

import { EXIT_CODES_HELP } from '../exit-codes.js'
import { defineCommand, subcommands } from './command.js'
import { COMMON, common, unSentinel, type Common } from './options.js'

const propose = defineCommand<Common & { file: string }>({
  command: 'propose <file>',
  describe: 'propose a descriptor set (JSON file, or - for stdin) (scope registry:propose)',
  builder: (r) =>
    r
      .positional('file', { type: 'string', demandOption: true })
      .options(COMMON)
      .example(`echo '{"schemaVersion":1,"items":[]}' | $0 registry propose -`, '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryProposeCommand({ ...common(a), file: unSentinel(a.file)! }, io.stdout)
  },
})

const approve = defineCommand<Common & { proposalId: string; key?: string }>({
  command: 'approve <proposalId>',
  describe: "sign a proposal with a signer key, by default the node's own (scope registry:approve)",
  builder: (r) =>
    r
      .positional('proposalId', { type: 'string', demandOption: true })
      .options(COMMON)
      .option('key', { type: 'string', describe: 'signer key file [default: <data-dir>/registry/registry-signer.key]', requiresArg: true })
      .example('$0 registry approve p-…', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryApproveCommand({ ...common(a), proposalId: a.proposalId, key: a.key }, io.stdout)
  },
})

const commit = defineCommand<Common & { proposalId: string }>({
  command: 'commit <proposalId>',
  describe: 'commit an approved proposal (scope registry:commit)',
  builder: (r) => r.positional('proposalId', { type: 'string', demandOption: true }).options(COMMON).example('$0 registry commit p-…', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryCommitCommand({ ...common(a), proposalId: a.proposalId }, io.stdout)
  },
})

const head = defineCommand<Common>({
  command: 'head',
  describe: 'the current version, hash and tree',
  builder: (r) => r.options(COMMON).example('$0 registry head --json', '').epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryHeadCommand(common(a), io.stdout)
  },
})

const verify = defineCommand<Common & { logKey?: string; witness?: unknown[]; witnessQuorum?: number; wait?: number }>({
  command: 'verify',
  describe: 'verify the whole log from its C2SP tiles, trusting only the log key (pinned on first use); exit 5 when it does not verify',
  builder: (r) =>
    r
      .options(COMMON)
      .option('log-key', { type: 'string', describe: "the log's verifier key, as ron-node status prints it [default: the pinned one, else pin the node's on first use]", requiresArg: true })
      .option('witness', { type: 'string', array: true, describe: 'a witness cosignature key (repeat for several)', requiresArg: true })
      .option('witness-quorum', { type: 'number', describe: 'valid cosignatures needed from the --witness keys [default: all of them]', requiresArg: true })
      .option('wait', { type: 'number', describe: 'ms to wait for the witness quorum on the latest checkpoint [default: 5000]', requiresArg: true })
      .example('$0 registry verify', 'verify, pinning the key on first use')
      .example('$0 registry verify --log-key ron.registry/1a2b3c4d+…+… --witness w1+…+… --witness w2+…+…', 'require both witnesses')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry-verify.js')).registryVerifyCommand(
      { ...common(a), logKey: a.logKey, witness: a.witness?.map(String), witnessQuorum: a.witnessQuorum, waitMs: a.wait },
      io.stdout,
      io.stderr,
    )
  },
})

const watch = defineCommand<Common & { from?: number; count?: number }>({
  command: 'watch',
  describe: 'print commits as they happen (SSE), until Ctrl+C',
  builder: (r) =>
    r
      .options(COMMON)
      .option('from', { type: 'number', describe: 'replay commits after this version first', requiresArg: true })
      .option('count', { type: 'number', describe: 'stop after this many commits', requiresArg: true })
      .example('$0 registry watch --from 0 --json', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryWatchCommand({ ...common(a), from: a.from, count: a.count }, io.stdout)
  },
})

const fsck = defineCommand<Common & { dir?: string; repair?: boolean; rebuildHead?: boolean }>({
  command: 'fsck',
  describe: "verify the local node's registry log on disk (read-only unless --repair); exit 5 on problems",
  builder: (r) =>
    r
      .options(COMMON)
      .option('dir', { type: 'string', describe: 'registry directory [default: <data-dir>/registry]', requiresArg: true })
      .option('repair', { type: 'boolean', describe: 'cut what was never acknowledged (a torn record past head.bin), as a start would; never an acknowledged entry' })
      .option('rebuild-head', { type: 'boolean', describe: 'write head.bin for a log without a usable one (a log from before head records); only when nothing else is wrong' })
      .example('$0 registry fsck', '')
      .example('$0 registry fsck --repair', '')
      .epilog(EXIT_CODES_HELP),
  handler: async (a, io) => {
    await (await import('../actions/registry.js')).registryFsckCommand({ ...common(a), dir: a.dir, repair: a.repair, rebuildHead: a.rebuildHead }, io.stdout)
  },
})

/** `ron-node registry`. */
export const registry = defineCommand({
  command: 'registry',
  describe: 'the signed, append-only registry log',
  builder: (y, io) => subcommands(y, io, [propose, approve, commit, head, verify, watch, fsck], 'say which: registry propose, approve, commit, head, watch or fsck'),
})
