/**
 * Instructions per request on a server's main thread, counted by callgrind: the one measure that
 * stayed stable (within 0.3% between runs) on a busy 2-core box where req/s and /proc CPU moved
 * 20–30%. The server runs a bench factory under `valgrind --tool=callgrind` (about 50x slower),
 * takes a warm-up of autocannon requests, then callgrind counts `requests` more.
 *
 *   npx tsx bench/tools/callgrind.ts <factory in bench/servers> [path=/hello] [requests=10000] [options-json]
 *   npx tsx bench/tools/callgrind.ts baselines/bare.ts
 *   npx tsx bench/tools/callgrind.ts core/hello.ts /hello 10000 '{"mode":"service"}'
 *   npx tsx bench/tools/callgrind.ts storage/storage.ts /o 300 '{}' 1048576   # PUTs of fresh 1 MiB bodies, c=16
 *   npx tsx bench/tools/callgrind.ts index/names.ts /names 2000 '{}' names     # name writes, c=16
 *
 * The factory is a path under `bench/servers/`; the flat names of the old layout (`bare.ts`,
 * `ron-hello.ts`, `ron-storage.ts`, `index.ts` with its `mode` option, …) still work, mapped by
 * {@link LEGACY} to their new modules, so earlier command lines give the same figures.
 *
 * With a fifth argument (a body size), each request is a `PUT` of a fresh body of that size
 * (its first bytes are a counter), at concurrency 16 (`RON_CALLGRIND_CONNECTIONS`), with the
 * factory's `extra.token` as bearer. With `names` instead of a size, each request is a name
 * write, `PUT /names/name-<n % 1000>.bench` of `{"manifestAddress"}` cycling through the
 * factory's `extra.manifests` (`index/names.ts`, `baselines/lmdb.ts`), at the same concurrency.
 * The warm-up is 3000 requests (1000 name writes) or half the count, whichever is more;
 * `RON_CALLGRIND_WARMUP=<n>` sets it (300 is enough for 1 MiB PUTs and takes minutes, not half an hour).
 * `tools/callgrind-names.ts` then names the JIT frames of the printed profile.
 *
 * JIT frames are named (`--perf-basic-prof`), so `callgrind_annotate <the printed file>` shows
 * which functions the instructions are in. Needs valgrind (Debian: `apt install valgrind`).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { startUnderCallgrind } from '../lib/callgrind-server.js'
import { SERVER_CODE } from '../lib/process.js'

/**
 * The flat factory names of the old `bench/servers/` (and the `mode` switch of its `index.ts`),
 * each mapped to its module under `bench/servers/` and the options it replaces `mode` with.
 */
const LEGACY: Record<string, (options: Record<string, unknown>) => [string, Record<string, unknown>]> = {
  'bare.ts': (o) => ['baselines/bare.ts', o],
  'fastify.ts': (o) => ['baselines/fastify.ts', o],
  'serve-handler.ts': (o) => ['baselines/serve-handler.ts', o],
  'ron-hello.ts': (o) => ['core/hello.ts', o],
  'ron-storage.ts': (o) => ['storage/storage.ts', o],
  'interop-floor.ts': (o) => ['interop/floor.ts', o],
  'index.ts': ({ mode, ...o }) => {
    if (mode === 'bare') return ['index/bare-resolve.ts', o]
    if (mode === 'cache-hit') return ['index/resolve.ts', o]
    if (mode === 'names') return ['index/names.ts', o]
    if (mode === 'bare-names') return ['baselines/lmdb.ts', o]
    if (mode === 'hedge-on' || mode === 'hedge-off') return ['index/hedge.ts', { ...o, hedge: mode === 'hedge-on' }]
    throw new Error(`index.ts: unknown mode ${String(mode)}`)
  },
}

const [factoryArg = 'baselines/bare.ts', path = '/hello', n = '10000', optionsArg = '{}', putSize] = process.argv.slice(2)
const [factory, options] = LEGACY[factoryArg]?.(JSON.parse(optionsArg) as Record<string, unknown>) ?? [factoryArg, JSON.parse(optionsArg) as Record<string, unknown>]
const requests = Number(n)
const dir = mkdtempSync(join(tmpdir(), 'ron-callgrind-'))
const { child, url, pid, extra } = await startUnderCallgrind(dir, factory, options)
let seq = 0
const names = putSize === 'names'
const body = putSize === undefined || names ? undefined : Buffer.alloc(Number(putSize), 7)
const manifests = extra.manifests ?? []
const load = (amount: number): ReturnType<typeof autocannon> =>
  names
    ? autocannon({
        url: url + path,
        connections: Number(process.env.RON_CALLGRIND_CONNECTIONS ?? 16),
        amount,
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...(extra.token === undefined ? {} : { authorization: `Bearer ${extra.token}` }) },
        requests: [
          {
            setupRequest: (req) => {
              const i = ++seq
              return { ...req, path: `/names/name-${i % 1000}.bench`, body: JSON.stringify({ manifestAddress: manifests[i % manifests.length] }) }
            },
          },
        ],
      })
    : body === undefined
    ? autocannon({ url: url + path, connections: 50, amount })
    : autocannon({
        url: url + path,
        connections: Number(process.env.RON_CALLGRIND_CONNECTIONS ?? 16),
        amount,
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream', ...(extra.token === undefined ? {} : { authorization: `Bearer ${extra.token}` }) },
        requests: [
          {
            setupRequest: (req) => {
              // A fresh body each time (a new address): a put of stored content is not the same work.
              const b = Buffer.from(body)
              b.writeUInt32LE(++seq, 0)
              b.writeUInt32LE(process.pid, 4)
              return { ...req, body: b }
            },
          },
        ],
      })
await load(process.env.RON_CALLGRIND_WARMUP !== undefined ? Number(process.env.RON_CALLGRIND_WARMUP) : names ? Math.max(1000, requests / 2) : Math.max(3000, requests / 2))
execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' })
const r = await load(requests)
execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' })
process.kill(Number(pid), 'SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))

// One file per thread and dump: <pid>.<dump>-<thread>; thread 01 is the main thread.
const totals = readdirSync(dir)
  .filter((f) => /\.\d+-\d+$/.test(f))
  .map((f) => ({ f, thread: f.slice(f.lastIndexOf('-') + 1), ir: Number((/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), 'utf8')) ?? [])[1] ?? 0) }))
const dump = totals.filter((t) => t.thread === '01').sort((a, b) => b.ir - a.ir)[0]
if (dump === undefined) throw new Error(`no callgrind dump in ${dir}`)
const prefix = dump.f.slice(0, dump.f.lastIndexOf('-'))
const others = totals.filter((t) => t.f.startsWith(prefix) && t.thread !== '01').reduce((a, t) => a + t.ir, 0)
console.log(`${factoryArg} ${optionsArg} ${path}: ${r.requests.total} requests (${r.non2xx} non-2xx: ${JSON.stringify((r as unknown as { statusCodeStats?: unknown }).statusCodeStats)}), servers on ${SERVER_CODE}`)
// Per answered request: under valgrind a load generator can time requests out, and a timed-out
// request did not cost the server a whole request's work.
const answered = r.requests.total
if (answered !== requests || r.non2xx > 0) console.warn(`warning: ${answered} of ${requests} requests answered, ${r.non2xx} not 2xx; figures are per answered request and mix in error paths`)
console.log(`main thread ${(dump.ir / answered).toFixed(0)} instructions/request, other threads ${(others / answered).toFixed(0)}; profile: ${join(dir, dump.f)}`)
