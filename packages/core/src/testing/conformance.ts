/**
 * The service conformance suite (issue 21): what every service built on the service contract
 * must do, as checks a test runner runs one by one — lifecycle and idempotent close, the built-in
 * endpoints, the drain order with its read window, limits and their 413/429 envelopes, CORS,
 * reload, error envelopes against the error catalog, metrics against the README, topology against
 * `docs/CONCURRENCY.md`, and (with `surface`) the exported names against the API report. Framework-free (assertions are `node:assert`), so a third-party service
 * runs it with any runner:
 *
 * ```ts
 * for (const check of serviceConformance(subject)) it(check.name, () => check.run())
 * ```
 *
 * Every check creates its own instance on a {@link VirtualClock} (the drain is observed over
 * virtual time, never by sleeping) and closes it.
 *
 * @module
 */

import assert from 'node:assert/strict'
import { isRonError } from '../errors.js'
import { CORE_METRIC_NAMES } from '../metrics/service-metrics.js'
import { metricValue } from '../metrics/exposition.js'
import { concurrencyDocProblems } from '../service/topology-doc.js'
import { BASE_IMMUTABLE_KEYS } from '../service/base-config.js'
import type { RonService } from '../service/types.js'
import { MemoryTransport } from '../transport/memory.js'
import type { TransportRequest, TransportResponse } from '../transport/types.js'
import { metricLabelNames } from './metrics.js'
import { VirtualClock } from './virtual-clock.js'

/** A request the suite sends (in-process, through a `MemoryTransport`). */
export interface ConformanceRequest {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Uint8Array
}

/** The service under test, as the suite needs it. */
export interface ConformanceSubject {
  /** The service id: the `service` metric label and the token audience. */
  id: string
  /**
   * Creates a fresh instance. `config` holds the base keys a check sets (`http.*`, `cors`,
   * `drainDeadlineMs`, `drainReadWindowMs`) to merge into the subject's own config; `runtime`
   * carries the check's clock, to merge into the subject's runtime (which brings its own auth).
   */
  create(config: Record<string, unknown>, runtime: { clock: VirtualClock }): Promise<RonService>
  /** A cheap read the service answers below 500 when ready (a status or a lookup). */
  read: ConformanceRequest
  /** A write route with a valid token: refused with 503 `Draining` during a drain's read window. */
  write: ConformanceRequest
  /** The same write without a token (401 `missing`), for the error-envelope check. @default `write` without `authorization` */
  unauthenticated?: ConformanceRequest
  /** Config and a request that make the service answer 413 `OverLimit` (a JSON body over `http.jsonBodyLimit`, an object over its cap). */
  overLimit: { config: Record<string, unknown>; request: ConformanceRequest }
  /** Texts of the package README (its `## Metrics` section), `docs/CONCURRENCY.md` and `docs/errors.md`. */
  docs: { readme: string; concurrency: string; errors: string }
  /**
   * Whether a drain has a read window (reads served, writes refused). `false` for a service that
   * turns unready as a whole at the start of a drain (index). @default true
   */
  readWindow?: boolean
  /**
   * The package's public surface, checked against its API report (`packages/<dir>/api-report.md`) and the contract's names:
   * the entry (`'@ron/storage'`), its module namespace (`import * as entry from '@ron/storage'`)
   * and the text of the API report. @default not checked
   */
  surface?: { entry: string; exports: Record<string, unknown>; apiReport: string }
  /**
   * The version `/version` reports when the config names none: the package's `package.json`
   * version. With it, a check asserts `/version` is `{service, version, node}` and that the
   * config's `version` key overrides it. @default not checked
   */
  version?: string
}

/** One check of the suite. */
export interface ConformanceCheck {
  /** A behaviour, as a test name. */
  name: string
  /** Runs it; rejects with an `AssertionError` (or the service's error) when it does not hold. */
  run(): Promise<void>
}

interface Instance {
  svc: RonService
  clock: VirtualClock
  t: MemoryTransport
  send(r: ConformanceRequest, extraHeaders?: Record<string, string>): Promise<TransportResponse>
  /** Closes the service, moving virtual time on until it is closed. */
  finish(): Promise<void>
  /** {@link Instance.finish}, then the transport. */
  close(): Promise<void>
}

interface Envelope {
  code: string
  message: string
  retryable: boolean
  corr_id: string
  details: Record<string, unknown>
}

const WINDOW_MS = 1000
const DEADLINE_MS = 1000

/**
 * The conformance checks for `subject`. Run each as a test.
 *
 * @example
 * ```ts
 * import { serviceConformance } from '@ron/core/testing'
 * describe('storage conformance', () => {
 *   for (const check of serviceConformance(storageSubject)) it(check.name, () => check.run())
 * })
 * ```
 */
export function serviceConformance(subject: ConformanceSubject): ConformanceCheck[] {
  const id = subject.id
  const readWindow = subject.readWindow !== false

  async function start(config: Record<string, unknown> = {}): Promise<Instance> {
    const clock = new VirtualClock(1_700_000_000_000)
    const svc = await subject.create({ drainReadWindowMs: 0, drainDeadlineMs: DEADLINE_MS, ...config }, { clock })
    const t = new MemoryTransport()
    t.mount(id, svc)
    let finished: Promise<void> | undefined
    let closed: Promise<void> | undefined
    const finish = (): Promise<void> =>
      (finished ??= (async () => {
        const done = svc.close()
        // Whatever the drain waits for on virtual time (window, deadline) passes.
        for (let i = 0; i < 100 && !(await settled(done)); i++) await clock.advance(DEADLINE_MS)
        await done
      })())
    return {
      svc,
      clock,
      t,
      send: (r, extra = {}) => t.request(id, toTransport(r, extra)),
      finish,
      close: () =>
        (closed ??= (async () => {
          await finish()
          await t.close()
        })()),
    }
  }

  async function withInstance(config: Record<string, unknown>, fn: (i: Instance) => Promise<void>): Promise<void> {
    const inst = await start(config)
    try {
      await fn(inst)
    } finally {
      await inst.close()
    }
  }

  const checks: ConformanceCheck[] = [
    {
      name: 'close() is idempotent, and calls after it fail with Closed',
      run: () =>
        withInstance({}, async (i) => {
          const first = i.svc.close()
          const second = i.svc.close()
          await i.finish()
          await Promise.all([first, second])
          await i.svc.close()
          const res = await i.send(subject.read)
          assert.equal(res.status, 503, 'a request after close() is refused')
          const env = await envelope(res)
          assert.equal(env.code, 'Closed')
          await assert.rejects(i.svc.reload({}), (e: unknown) => isRonError(e, 'Closed'))
        }),
    },
    {
      name: 'serves /healthz, /readyz, /metrics and /version',
      run: () =>
        withInstance({}, async (i) => {
          const healthz = await i.send({ method: 'GET', path: '/healthz' })
          assert.equal(healthz.status, 200)
          assert.deepEqual(await healthz.json(), { live: true })
          const readyz = await i.send({ method: 'GET', path: '/readyz' })
          const ready = await readyz.json<{ ready: boolean; writeReady: boolean; paths: Record<string, boolean>; missing: string[] }>()
          assert.equal(typeof ready.ready, 'boolean')
          assert.equal(typeof ready.writeReady, 'boolean')
          assert.ok(Array.isArray(ready.missing))
          assert.equal(readyz.status, ready.ready ? 200 : 503, '/readyz answers 200 exactly when ready')
          if (!ready.ready) assert.ok(readyz.headers['retry-after'] !== undefined, 'a 503 /readyz carries Retry-After')
          assert.deepEqual({ ...ready, missing: [...ready.missing].sort() }, { ...pick(i.svc.health()), missing: [...i.svc.health().missing].sort() }, '/readyz is health()')
          const metrics = await i.send({ method: 'GET', path: '/metrics' })
          assert.equal(metrics.status, 200)
          assert.match(metrics.headers['content-type'] ?? '', /^text\/plain/)
          assert.match(await metrics.text(), /# TYPE http_requests_total counter/)
          const version = await i.send({ method: 'GET', path: '/version' })
          assert.equal(version.status, 200)
          assert.equal((await version.json<{ service: string }>()).service, id)
        }),
    },
    ...(subject.version === undefined
      ? []
      : [
          {
            name: "/version reports the package.json version, or the config's version key",
            run: async (): Promise<void> => {
              for (const [config, expected] of [
                [{}, subject.version],
                [{ version: '9.9.9-embedder' }, '9.9.9-embedder'],
              ] as const) {
                await withInstance(config, async (i) => {
                  const res = await i.send({ method: 'GET', path: '/version' })
                  assert.equal(res.status, 200)
                  assert.deepEqual(await res.json(), { service: id, version: expected, node: process.version })
                })
              }
            },
          },
        ]),
    {
      name: readWindow
        ? 'a drain refuses writes and keeps reads through the read window, then stops intake with 503 Draining; /healthz stays 200'
        : 'a drain turns the service unready at once and stops intake with 503 Draining; /healthz stays 200',
      run: () =>
        withInstance({ drainReadWindowMs: WINDOW_MS, drainDeadlineMs: DEADLINE_MS }, async (i) => {
          const before = await i.send(subject.read)
          assert.ok(before.status < 500, `the read is served before the drain (got ${before.status})`)
          await before.dump()
          const closing = i.svc.close()
          await i.clock.flush()
          const h = i.svc.health()
          assert.equal(h.writeReady, false, 'writes are unready as soon as the drain starts')
          assert.ok(h.missing.includes('draining'))
          const write = await i.send(subject.write)
          assert.equal(write.status, 503, 'a write during the drain is refused')
          // Without a read window a drain with nothing in flight may be over already: Closed.
          const writeCode = (await envelope(write)).code
          assert.ok(readWindow ? writeCode === 'Draining' : ['Draining', 'Closed'].includes(writeCode), `the write is refused with Draining (got ${writeCode})`)
          assert.ok(write.headers['retry-after'] !== undefined, 'with Retry-After')
          if (readWindow) {
            assert.equal(h.ready, true, 'reads stay ready in the read window')
            const readyz = await i.send({ method: 'GET', path: '/readyz' })
            assert.equal(readyz.status, 200, '/readyz is 200 in the read window')
            assert.equal((await readyz.json<{ writeReady: boolean }>()).writeReady, false)
            const read = await i.send(subject.read)
            assert.ok(read.status < 500, `a read is served in the read window (got ${read.status})`)
            await read.dump()
            await i.clock.advance(WINDOW_MS)
          }
          assert.equal(i.svc.health().ready, false, 'reads are unready once the window is over')
          const readyz = await i.send({ method: 'GET', path: '/readyz' })
          assert.equal(readyz.status, 503)
          assert.ok(readyz.headers['retry-after'] !== undefined)
          await readyz.dump()
          const late = await i.send(subject.read)
          assert.equal(late.status, 503, 'intake stopped: a read is refused')
          // Draining while in-flight work drains; Closed once nothing was left to wait for.
          assert.ok(['Draining', 'Closed'].includes((await envelope(late)).code))
          assert.ok(late.headers['retry-after'] !== undefined)
          const healthz = await i.send({ method: 'GET', path: '/healthz' })
          assert.equal(healthz.status, 200, '/healthz stays 200 through the drain')
          await healthz.dump()
          await i.finish()
          await closing
        }),
    },
    {
      name: 'over a limit: 413 OverLimit, and 429 Busy with Retry-After counted in busy_rejections_total',
      run: async () => {
        await withInstance(subject.overLimit.config, async (i) => {
          const res = await i.send(subject.overLimit.request)
          assert.equal(res.status, 413)
          assert.equal((await envelope(res)).code, 'OverLimit')
        })
        await withInstance({ http: { maxRps: 1 } }, async (i) => {
          const first = await i.send(subject.read)
          assert.notEqual(first.status, 429)
          await first.dump()
          const second = await i.send(subject.read)
          assert.equal(second.status, 429, 'http.maxRps: 1 refuses the second request in the same instant')
          const env = await envelope(second)
          assert.equal(env.code, 'Busy')
          assert.equal(env.details['reason'], 'max_rps')
          assert.ok(second.headers['retry-after'] !== undefined)
          const text = await i.svc.metricsText()
          assert.ok((metricValue(text, 'busy_rejections_total') ?? 0) >= 1, 'the 429 is counted')
        })
      },
    },
    {
      name: 'CORS: reads from any origin, writes only from cors.writeOrigins',
      run: async () => {
        const origin = 'https://app.example'
        await withInstance({}, async (i) => {
          const read = await i.send(subject.read, { origin })
          assert.equal(read.headers['access-control-allow-origin'], '*')
          await read.dump()
          const pre = await i.send({ method: 'OPTIONS', path: subject.write.path }, { origin, 'access-control-request-method': subject.write.method })
          assert.equal(pre.status, 403, 'a preflight for a write from an origin not allowed is refused')
          assert.equal((await envelope(pre)).details['reason'], 'cors_origin')
        })
        await withInstance({ cors: { writeOrigins: [origin] } }, async (i) => {
          const pre = await i.send({ method: 'OPTIONS', path: subject.write.path }, { origin, 'access-control-request-method': subject.write.method })
          assert.ok(pre.status < 300, `an allowed origin's preflight passes (got ${pre.status})`)
          assert.equal(pre.headers['access-control-allow-origin'], origin)
          await pre.dump()
        })
      },
    },
    {
      name: 'reload: a valid change is swapped in, an invalid one rolled back, an immutable key refused',
      run: () =>
        withInstance({}, async (i) => {
          await i.svc.reload({ http: { maxRps: 1 } })
          const first = await i.send(subject.read)
          await first.dump()
          const limited = await i.send(subject.read)
          assert.equal(limited.status, 429, 'the reloaded http.maxRps applies')
          await limited.dump()
          await assert.rejects(i.svc.reload({ http: { maxRps: -1 } }), (e: unknown) => isRonError(e, 'Malformed') && e.details['path'] === 'http.maxRps')
          await i.clock.advance(1000)
          const still = await i.send(subject.read)
          await still.dump()
          const again = await i.send(subject.read)
          assert.equal(again.status, 429, 'the invalid reload changed nothing')
          await again.dump()
          await assert.rejects(i.svc.reload({ http: { readTimeoutMs: 1234 } }), (e: unknown) => isRonError(e, 'Malformed') && e.details['reason'] === 'immutable')
          const text = await i.svc.metricsText()
          assert.equal(metricValue(text, 'config_reloads_total'), 1)
          assert.equal(metricValue(text, 'config_reload_errors_total'), 2)
        }),
    },
    {
      name: 'error envelopes: every code and details.reason is in the error catalog',
      run: async () => {
        const catalog = parseErrorCatalog(subject.docs.errors)
        const seen: { res: TransportResponse; env: Envelope }[] = []
        const keep = async (res: TransportResponse): Promise<void> => {
          seen.push({ res, env: await envelope(res) })
        }
        await withInstance({ http: { maxRps: 2 } }, async (i) => {
          await keep(await i.send({ method: 'GET', path: '/no-such-route-conformance' }))
          await keep(await i.send(subject.unauthenticated ?? withoutAuth(subject.write)))
          await keep(await i.send(subject.read).then(async (r) => (r.status === 429 ? r : (await r.dump(), i.send(subject.read)))))
        })
        const codes = new Set(seen.map((s) => s.env.code))
        assert.ok(codes.has('NotFound') && codes.has('Unauthorized') && codes.has('Busy'), `provoked NotFound, Unauthorized and Busy (got ${[...codes].join(', ')})`)
        for (const { res, env } of seen) {
          assert.equal(typeof env.message, 'string')
          assert.equal(typeof env.retryable, 'boolean')
          assert.equal(typeof env.corr_id, 'string')
          assert.equal(res.headers['x-corr-id'], env.corr_id, 'the envelope carries the X-Corr-ID')
          assert.equal(catalog.status.get(env.code), res.status, `${env.code} is in the catalog with HTTP ${res.status}`)
          const reason = env.details['reason']
          if (typeof reason === 'string') assert.ok(catalog.reasons.has(`${env.code}:${reason}`), `${env.code} details.reason '${reason}' is in the catalog`)
        }
      },
    },
    {
      name: "the README's metrics are registered at startup with their type and labels, and it lists every metric of the service",
      run: () =>
        withInstance({}, async (i) => {
          const listed = parseReadmeMetrics(subject.docs.readme)
          assert.ok(listed.rows.length > 0, 'the README has a metrics table under "## Metrics"')
          const text = await i.svc.metricsText()
          const types = new Map<string, string>()
          for (const line of text.split('\n')) {
            const m = /^# TYPE (\S+) (\S+)$/.exec(line)
            if (m) types.set(m[1]!, m[2]!)
          }
          let labels: Map<string, string[]> | undefined
          try {
            labels = metricLabelNames(i.svc)
          } catch {
            labels = undefined
          }
          for (const row of listed.rows) {
            assert.ok(types.has(row.name), `README metric ${row.name} is registered at startup`)
            if (row.type !== undefined) assert.equal(types.get(row.name), row.type, `${row.name} is a ${row.type}`)
            if (row.labels !== undefined && labels !== undefined) assert.deepEqual([...(labels.get(row.name) ?? [])].sort(), [...row.labels].sort(), `${row.name} has labels {${row.labels.join(',')}}`)
          }
          for (const name of types.keys()) {
            if (CORE_METRIC_NAMES.has(name) || name.startsWith('config_reload')) continue
            assert.ok(listed.mentioned.has(name), `metric ${name} is listed in the README's Metrics section`)
          }
        }),
    },
    ...(subject.surface === undefined ? [] : [surfaceCheck(subject.surface)]),
    {
      name: 'describe() matches docs/CONCURRENCY.md',
      run: () =>
        withInstance({}, async (i) => {
          await Promise.resolve()
          assert.deepEqual(concurrencyDocProblems(subject.docs.concurrency, i.svc.describe()), [])
        }),
    },
  ]
  return checks
}

/**
 * The exported names against the API report, and the names the contract asks of a service
 * package: a `create*Service(config, transport, runtime)` factory, its `*ConfigSchema` and its
 * `*_IMMUTABLE_KEYS` (a superset of core's `BASE_IMMUTABLE_KEYS`).
 */
function surfaceCheck(surface: NonNullable<ConformanceSubject['surface']>): ConformanceCheck {
  return {
    name: 'the exported surface matches the API report and has the contract names (factory, config schema, immutable keys)',
    run: () => Promise.resolve().then(() => {
      const listed = apiReportNames(surface.apiReport, surface.entry)
      assert.ok(listed !== undefined, `the API report has a section for ${surface.entry}`)
      for (const name of Object.keys(surface.exports)) assert.ok(listed.has(name), `${surface.entry} exports ${name}, which the API report does not list (regenerate it)`)
      const names = Object.keys(surface.exports)
      const factories = names.filter((n) => /^create\w+Service$/.test(n) && typeof surface.exports[n] === 'function')
      assert.equal(factories.length, 1, `${surface.entry} exports one create*Service factory (found ${factories.join(', ') || 'none'})`)
      const factory = surface.exports[factories[0]!] as (...args: unknown[]) => unknown
      assert.ok(factory.length <= 3, `${factories[0]} takes (config, transport, runtime): at most three parameters`)
      assert.ok(
        names.some((n) => /ConfigSchema$/.test(n)),
        `${surface.entry} exports its config schema (*ConfigSchema)`,
      )
      const immutable = names.filter((n) => /_IMMUTABLE_KEYS$/.test(n))
      assert.equal(immutable.length, 1, `${surface.entry} exports its reload-immutable keys as <SERVICE>_IMMUTABLE_KEYS`)
      const keys = surface.exports[immutable[0]!] as readonly string[]
      for (const k of BASE_IMMUTABLE_KEYS) assert.ok(keys.includes(k), `${immutable[0]} includes the base key ${k}`)
    }),
  }
}

/** The names listed under `## \`entry\`` of an API report, or undefined when it has no such section. */
function apiReportNames(report: string, entry: string): Set<string> | undefined {
  const lines = report.split('\n')
  const head = `## \`${entry}\` (`
  const start = lines.findIndex((l) => l.startsWith(head))
  if (start === -1) return undefined
  const names = new Set<string>()
  for (const l of lines.slice(start + 1)) {
    if (l.startsWith('## ')) break
    const m = /^- `([^`]+)`/.exec(l)
    if (m) names.add(m[1]!)
  }
  return names
}

function toTransport(r: ConformanceRequest, extra: Record<string, string>): TransportRequest {
  return { method: r.method, path: r.path, headers: { ...r.headers, ...extra }, ...(r.body === undefined ? {} : { body: r.body }) }
}

function withoutAuth(r: ConformanceRequest): ConformanceRequest {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(r.headers ?? {})) if (k.toLowerCase() !== 'authorization') headers[k] = v
  return { ...r, headers }
}

function pick(h: { ready: boolean; writeReady: boolean; live: boolean; paths: Record<string, boolean>; missing: string[]; reason?: string }): Record<string, unknown> {
  return { ...h }
}

async function envelope(res: TransportResponse): Promise<Envelope> {
  const body = await res.json<{ error?: Envelope }>()
  assert.ok(body.error !== undefined && typeof body.error.code === 'string', `an error envelope (HTTP ${res.status})`)
  assert.ok(typeof body.error.details === 'object' && body.error.details !== null, 'with details')
  return body.error
}

async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  void p.then(
    () => (done = true),
    () => (done = true),
  )
  await new Promise<void>((r) => setImmediate(r))
  return done
}

/** Codes with their HTTP status, and `Code:reason` pairs, from a `docs/errors.md`. */
export function parseErrorCatalog(markdown: string): { status: Map<string, number>; reasons: Set<string> } {
  const status = new Map<string, number>()
  const reasons = new Set<string>()
  const rows = markdown.split('\n').filter((l) => l.startsWith('|'))
  const cellsOf = (l: string): string[] =>
    l
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim())
  const tick = (c: string | undefined): string | undefined => /^`([^`]+)`$/.exec(c ?? '')?.[1]
  for (const l of rows) {
    const c = cellsOf(l)
    const code = tick(c[0])
    if (code !== undefined && /^\d{3}$/.test(c[1] ?? '')) status.set(code, Number(c[1]))
  }
  for (const l of rows) {
    const c = cellsOf(l)
    for (let k = 0; k + 1 < c.length; k++) {
      const code = tick(c[k])
      const reason = tick(c[k + 1])
      if (code !== undefined && reason !== undefined && status.has(code)) reasons.add(`${code}:${reason}`)
    }
  }
  return { status, reasons }
}

/** One metric row of a README's `## Metrics` table. */
export interface ReadmeMetric {
  name: string
  /** `counter`, `gauge` or `histogram` when the row says. */
  type: string | undefined
  /** Label names when the row writes them (`name{a,b}`). */
  labels: string[] | undefined
}

/**
 * The metrics a README's `## Metrics` section lists: each table row's backticked names (with
 * `{labels}`) and type, and every backticked metric-like name mentioned anywhere in the section.
 */
export function parseReadmeMetrics(markdown: string): { rows: ReadmeMetric[]; mentioned: Set<string> } {
  const start = markdown.search(/^## Metrics\s*$/m)
  if (start === -1) return { rows: [], mentioned: new Set() }
  const rest = markdown.slice(start + 1)
  const end = rest.search(/^## /m)
  const section = end === -1 ? rest : rest.slice(0, end)
  const mentioned = new Set<string>()
  for (const m of section.matchAll(/`([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^`]*\})?`/g)) mentioned.add(m[1]!)
  const rows: ReadmeMetric[] = []
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*metric\s*\|/i.test(line)) continue
    const cells = line.split('|').slice(1, -1).map((c) => c.trim())
    const type = /\b(counter|gauge|histogram)s?\b/.exec(cells[1] ?? '')?.[1]
    for (const m of (cells[0] ?? '').matchAll(/`([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}`]*)\})?`/g)) {
      rows.push({ name: m[1]!, type, labels: m[2] === undefined ? undefined : m[2].split(',').map((s) => s.trim()).filter((s) => s !== '') })
    }
  }
  return { rows, mentioned }
}
