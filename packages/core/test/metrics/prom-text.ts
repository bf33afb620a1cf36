/** Test helper: reads sample values from a Prometheus text exposition, label order aside. */

function parseLabels(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (!s) return out
  for (const m of s.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = m[2]!
  return out
}

/**
 * The value of the sample `name` whose labels include `labels` (every given label equal), or
 * undefined when there is none; throws when several match.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found: number[] = []
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const have = parseLabels(m[2])
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) found.push(Number(m[3]))
  }
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]
}
