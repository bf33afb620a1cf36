/**
 * Topology as documentation: renders a service's tasks and channels as the markdown tables its
 * `docs/CONCURRENCY.md` must contain, and checks a document against the topology (the golden test
 * of SPEC.md 3.4).
 *
 * @module
 */

import type { Topology } from './types.js'
import { RonUsageError } from '../errors.js'

const cell = (s: string | number): string => String(s).replace(/\|/g, '\\|').trim()
const row = (cells: Array<string | number>): string => `| ${cells.map(cell).join(' | ')} |`
const list = (xs: readonly string[]): string => (xs.length === 0 ? '-' : xs.join(', '))

/** Header row of the tasks table. */
export const TASKS_HEADER = row(['task', 'count', 'criticality', 'description'])
/** Header row of the channels table. */
export const CHANNELS_HEADER = row(['channel', 'kind', 'capacity', 'producers', 'consumers', 'overflow'])

function taskRows(t: Topology): string[] {
  return t.tasks.map((x) => row([x.name, x.count, x.criticality, x.description]))
}

function channelRows(t: Topology): string[] {
  return t.channels.map((c) => row([c.name, c.kind, c.capacity, list(c.producers), list(c.consumers), c.overflow]))
}

/**
 * The markdown tables (tasks, then channels) describing `topology`, exactly as
 * `docs/CONCURRENCY.md` must contain them.
 *
 * @example
 * ```ts
 * await writeFile('docs/CONCURRENCY.md', `# Concurrency\n\n${topologyTables(topology)}`)
 * ```
 */
export function topologyTables(topology: Topology): string {
  return [
    '### Tasks',
    '',
    TASKS_HEADER,
    '|---|---|---|---|',
    ...taskRows(topology),
    '',
    '### Channels',
    '',
    CHANNELS_HEADER,
    '|---|---|---|---|---|---|',
    ...channelRows(topology),
    '',
  ].join('\n')
}

const normalise = (line: string): string =>
  line
    .trim()
    .split(/(?<!\\)\|/)
    .map((c) => c.trim())
    .join('|')

/**
 * Differences between a CONCURRENCY.md document and the topology: expected table rows that are
 * missing (or differ), and rows in the document's tables naming tasks or channels the topology
 * does not have. Whitespace inside rows is not significant. Empty when they agree.
 */
export function concurrencyDocProblems(markdown: string, topology: Topology): string[] {
  const lines = markdown.split(/\r?\n/).map(normalise)
  const present = new Set(lines)
  const problems: string[] = []
  for (const r of [TASKS_HEADER, ...taskRows(topology), CHANNELS_HEADER, ...channelRows(topology)]) {
    if (!present.has(normalise(r))) problems.push(`missing or different row: ${r}`)
  }
  // Rows of the two tables that name something the topology does not declare.
  const known = new Set([...topology.tasks.map((t) => t.name), ...topology.channels.map((c) => c.name)])
  let inTable = false
  for (const l of lines) {
    if (l === normalise(TASKS_HEADER) || l === normalise(CHANNELS_HEADER)) {
      inTable = true
      continue
    }
    if (!l.startsWith('|')) {
      inTable = false
      continue
    }
    if (!inTable || /^\|[-:|]+\|$/.test(l)) continue
    const name = l.split('|')[1] ?? ''
    if (!known.has(name)) problems.push(`row for an undeclared task or channel: ${l}`)
  }
  return problems
}

/**
 * Throws when `markdown` does not contain the topology's tables (see {@link concurrencyDocProblems}).
 * @throws {@link RonUsageError} `RON_CONCURRENCY_DOC` listing every difference, with the expected tables to paste
 */
export function assertConcurrencyDoc(markdown: string, topology: Topology): void {
  const problems = concurrencyDocProblems(markdown, topology)
  if (problems.length === 0) return
  throw new RonUsageError(
    'RON_CONCURRENCY_DOC',
    `docs/CONCURRENCY.md does not match the ${topology.service} topology:\n- ${problems.join('\n- ')}\n\nExpected tables:\n\n${topologyTables(topology)}`,
  )
}
