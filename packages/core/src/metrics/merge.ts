/**
 * One Prometheus exposition for several services. prom-client's `Registry.merge` refuses two
 * metrics of the same name, but every RON service has `queue_depth`, `http_requests_total`, ...
 * (told apart by the constant `service` label), so this merges by metric family instead: one
 * `# HELP`/`# TYPE` per name, followed by the samples of every registry.
 *
 * @module
 */

/** `Content-Type` of a `/metrics` reply (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

interface Family {
  help: string | undefined
  type: string | undefined
  samples: string[]
}

/**
 * Merges Prometheus text expositions by family. Samples keep their order within each input;
 * families appear in order of first appearance.
 */
export function mergeExpositions(texts: readonly string[]): string {
  const families = new Map<string, Family>()
  const family = (name: string): Family => {
    let f = families.get(name)
    if (f === undefined) {
      f = { help: undefined, type: undefined, samples: [] }
      families.set(name, f)
    }
    return f
  }
  for (const text of texts) {
    let current: Family | undefined
    let currentName = ''
    for (const line of text.split('\n')) {
      if (line === '') continue
      if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
        const rest = line.slice(7)
        const sp = rest.indexOf(' ')
        const name = sp === -1 ? rest : rest.slice(0, sp)
        currentName = name
        current = family(name)
        if (line[2] === 'H') current.help ??= line
        else current.type ??= line
        continue
      }
      if (line.startsWith('#')) continue
      // A sample belongs to the family announced above it (histograms add _bucket/_sum/_count).
      const sampleName = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ''
      if (current === undefined || !belongsTo(sampleName, currentName)) {
        currentName = sampleName
        current = family(sampleName)
      }
      current.samples.push(line)
    }
  }
  const out: string[] = []
  for (const f of families.values()) {
    if (f.help !== undefined) out.push(f.help)
    if (f.type !== undefined) out.push(f.type)
    out.push(...f.samples)
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`
}

function belongsTo(sample: string, family: string): boolean {
  if (sample === family) return true
  if (!sample.startsWith(family)) return false
  const suffix = sample.slice(family.length)
  return suffix === '_bucket' || suffix === '_sum' || suffix === '_count' || suffix === '_total' || suffix === '_created'
}
