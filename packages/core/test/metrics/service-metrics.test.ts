import { describe, expect, it } from 'vitest'
import { METRICS_CONTENT_TYPE, createServiceMetrics, mergeExpositions } from '@ron/core'
import { sampleValue } from './prom-text.js'

/** Parses a Prometheus text exposition into families (name → TYPE count and sample lines). */
function parse(text: string): Map<string, { types: number; helps: number; samples: string[] }> {
  const out = new Map<string, { types: number; helps: number; samples: string[] }>()
  let current = ''
  const fam = (n: string) => {
    let f = out.get(n)
    if (!f) out.set(n, (f = { types: 0, helps: 0, samples: [] }))
    return f
  }
  for (const line of text.split('\n')) {
    if (line === '') continue
    const m = /^# (HELP|TYPE) (\S+)/.exec(line)
    if (m) {
      current = m[2]!
      if (m[1] === 'TYPE') fam(current).types++
      else fam(current).helps++
      continue
    }
    expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+Inf-]+$|^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? NaN$/)
    fam(current).samples.push(line)
  }
  return out
}

describe('createServiceMetrics', () => {
  it('sink counters and gauges are tallied and handed to prom-client at scrape time: values add up across scrapes, the latest gauge wins, labels are conformed', async () => {
    const m = createServiceMetrics({ service: 'svc' })
    m.sink.inc('io_timeouts_total', { op: 'read' })
    m.sink.inc('io_timeouts_total', { op: 'read' }, 2)
    m.sink.inc('io_timeouts_total', { op: 'write', extra: 'dropped' })
    m.sink.inc('io_timeouts_total', { op: 'read' }, Number.NaN) // ignored, never breaks a scrape
    m.sink.set('queue_depth', { queue: 'work' }, 5)
    m.sink.set('queue_depth', { queue: 'work' }, 3)
    let text = await m.text()
    expect(sampleValue(text, 'io_timeouts_total', { op: 'read' })).toBe(3)
    expect(sampleValue(text, 'io_timeouts_total', { op: 'write' })).toBe(1)
    expect(sampleValue(text, 'queue_depth', { queue: 'work' })).toBe(3)
    m.sink.inc('io_timeouts_total', { op: 'read' })
    m.sink.set('queue_depth', { queue: 'work' }, 0)
    text = await m.text()
    expect(sampleValue(text, 'io_timeouts_total', { op: 'read' })).toBe(4)
    expect(sampleValue(text, 'queue_depth', { queue: 'work' })).toBe(0)
    // A service's own metric of a name the sink also reports keeps working through both.
    const mine = m.counter('my_events_total', 'Events.', ['kind'])
    mine.inc({ kind: 'a' })
    m.sink.inc('my_events_total', { kind: 'a' })
    expect(sampleValue(await m.text(), 'my_events_total', { kind: 'a' })).toBe(2)
  })

  it('labels every sample with the service and counts HTTP requests per route, method and status', async () => {
    const m = createServiceMetrics({ service: 'storage' })
    m.observeHttp('/o/:addr', 'GET', 200, 0.003)
    m.observeHttp('/o/:addr', 'GET', 200, 0.2)
    m.observeHttp('/o/:addr', 'GET', 404, 0.001)
    const text = await m.text()
    expect(sampleValue(text, 'http_requests_total', { route: '/o/:addr', method: 'GET', status: '200', service: 'storage' })).toBe(2)
    expect(sampleValue(text, 'http_requests_total', { route: '/o/:addr', method: 'GET', status: '404', service: 'storage' })).toBe(1)
    expect(sampleValue(text, 'http_request_duration_seconds_count', { route: '/o/:addr', service: 'storage' })).toBe(3)
    expect(sampleValue(text, 'http_request_duration_seconds_bucket', { route: '/o/:addr', le: '0.005' })).toBe(2)
    expect(text).toMatch(/# HELP http_requests_total \S/)
  })

  it('a route-bound observer counts exactly what observeHttp counts, across method/status changes and a registry reset', async () => {
    const bound = createServiceMetrics({ service: 'storage' })
    const plain = createServiceMetrics({ service: 'storage' })
    const observe = bound.httpObserver('/o/:addr')
    const calls: Array<[string, number, number]> = [
      ['GET', 200, 0.003],
      ['GET', 200, 0.2],
      ['GET', 404, 0.001],
      ['HEAD', 404, 0.001],
      ['GET', 200, 7],
      ['GET', 200, Number.NaN],
    ]
    for (const [method, status, s] of calls) {
      observe(method, status, s)
      plain.observeHttp('/o/:addr', method, status, s)
    }
    expect(await bound.text()).toBe(await plain.text())
    expect(sampleValue(await bound.text(), 'http_requests_total', { route: '/o/:addr', method: 'GET', status: '200' })).toBe(4)
    // After a reset the observer must not keep counting into the tallies the reset dropped.
    bound.registry.resetMetrics()
    plain.registry.resetMetrics()
    observe('GET', 200, 0.003)
    plain.observeHttp('/o/:addr', 'GET', 200, 0.003)
    const text = await bound.text()
    expect(text).toBe(await plain.text())
    expect(sampleValue(text, 'http_requests_total', { route: '/o/:addr', method: 'GET', status: '200' })).toBe(1)
    expect(sampleValue(text, 'http_request_duration_seconds_count', { route: '/o/:addr' })).toBe(1)
  })

  it('creates sink metrics on first use with seed help text, and never throws on odd labels', async () => {
    const m = createServiceMetrics({ service: 'index' })
    m.sink.set('queue_depth', { queue: 'work' }, 3)
    m.sink.inc('busy_rejections_total', { queue: 'work' })
    m.sink.inc('busy_rejections_total', { queue: 'work', extra: 'dropped' }, 2)
    m.sink.inc('busy_rejections_total', undefined)
    m.sink.observe('resolve_seconds', { op: 'peer' }, 0.01)
    m.sink.set('busy_rejections_total', undefined, 1) // wrong type: ignored, not thrown
    m.sink.inc('bad name!', {})
    const text = await m.text()
    expect(text).toContain('# HELP queue_depth Items waiting in a bounded queue.')
    expect(sampleValue(text, 'queue_depth', { queue: 'work', service: 'index' })).toBe(3)
    expect(sampleValue(text, 'busy_rejections_total', { queue: 'work', service: 'index' })).toBe(3)
    expect(sampleValue(text, 'busy_rejections_total', { queue: '', service: 'index' })).toBe(1)
    expect(sampleValue(text, 'resolve_seconds_count', { op: 'peer', service: 'index' })).toBe(1)
  })

  it('returns the same service-specific metric when declared twice', () => {
    const m = createServiceMetrics({ service: 's' })
    const c = m.counter('objects_stored_total', 'Objects stored.', ['backend'])
    expect(m.counter('objects_stored_total', 'Objects stored.', ['backend'])).toBe(c)
    expect(m.gauge('g', 'A gauge.')).toBe(m.gauge('g', 'A gauge.'))
    expect(m.histogram('h', 'A histogram.', [], [1, 2])).toBe(m.histogram('h', 'A histogram.'))
  })

  it('keeps two instances with the same service name apart', async () => {
    const a = createServiceMetrics({ service: 'storage' })
    const b = createServiceMetrics({ service: 'storage' })
    a.sink.inc('tasks_spawned_total', { kind: 'repair' })
    expect(sampleValue(await a.text(), 'tasks_spawned_total', { kind: 'repair', service: 'storage' })).toBe(1)
    expect(sampleValue(await b.text(), 'tasks_spawned_total', { kind: 'repair' })).toBeUndefined()
  })
})

describe('mergeExpositions of several services', () => {
  it('renders one parseable exposition with each family once and every service’s samples', async () => {
    const services = ['storage', 'registry', 'index'].map((service) => {
      const m = createServiceMetrics({ service })
      m.sink.set('queue_depth', { queue: 'work' }, service.length)
      m.observeHttp('/healthz', 'GET', 200, 0.001)
      return m
    })
    const merged = mergeExpositions(await Promise.all(services.map((s) => s.text())))
    const fams = parse(merged)
    for (const [name, f] of fams) {
      expect(f.types, name).toBe(1)
      expect(f.helps, name).toBe(1)
    }
    const depth = fams.get('queue_depth')!.samples
    expect(depth).toEqual([
      'queue_depth{queue="work",service="storage"} 7',
      'queue_depth{queue="work",service="registry"} 8',
      'queue_depth{queue="work",service="index"} 5',
    ])
    const hist = fams.get('http_request_duration_seconds')!.samples
    for (const s of ['storage', 'registry', 'index']) {
      expect(hist.some((l) => l.startsWith('http_request_duration_seconds_bucket') && l.includes(`service="${s}"`))).toBe(true)
      expect(sampleValue(merged, 'http_request_duration_seconds_count', { route: '/healthz', service: s })).toBe(1)
    }
    expect(METRICS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8')
  })

  it('merges plain texts, keeping samples without HELP/TYPE under their own family', () => {
    const out = mergeExpositions(['# HELP a A.\n# TYPE a counter\na{s="1"} 1\nb 2\n', '# HELP a A.\n# TYPE a counter\na{s="2"} 3\n', ''])
    expect(out).toBe('# HELP a A.\n# TYPE a counter\na{s="1"} 1\na{s="2"} 3\nb 2\n')
    expect(mergeExpositions([])).toBe('')
  })
})
