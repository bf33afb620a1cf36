import { describe, expect, it } from 'vitest'
import type { Topology } from '@ron/core'
import { assertConcurrencyDoc, concurrencyDocProblems, topologyTables } from '@ron/core/testing'

const topology: Topology = {
  service: 'storage',
  tasks: [
    { name: 'get-pool', count: 8, criticality: 'critical', description: 'serves GET /o/:addr' },
    { name: 'repair', count: 1, criticality: 'important', description: 'restores missing copies | paced' },
  ],
  channels: [{ name: 'work', kind: 'mpsc', capacity: 512, producers: ['http'], consumers: ['get-pool'], overflow: 'reject-new' }],
}

describe('CONCURRENCY.md golden helpers', () => {
  it('renders the task and channel tables', () => {
    const md = topologyTables(topology)
    expect(md).toContain('| task | count | criticality | description |')
    expect(md).toContain('| get-pool | 8 | critical | serves GET /o/:addr |')
    expect(md).toContain('| repair | 1 | important | restores missing copies \\| paced |')
    expect(md).toContain('| work | mpsc | 512 | http | get-pool | reject-new |')
  })

  it('accepts a document containing the tables, whitespace aside', () => {
    const doc = `# Concurrency\n\nProse.\n\n${topologyTables(topology).replace('| 8 |', '|   8   |')}\nMore prose.\n`
    expect(concurrencyDocProblems(doc, topology)).toEqual([])
    expect(() => assertConcurrencyDoc(doc, topology)).not.toThrow()
  })

  it('names rows that drifted, are missing, or describe undeclared channels', () => {
    const drifted = topologyTables(topology).replace('| 512 |', '| 256 |') + '| ghost | mpsc | 1 | a | b | reject-new |\n'
    const problems = concurrencyDocProblems(drifted, topology)
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringContaining('| work | mpsc | 512 |'), expect.stringContaining('ghost')]),
    )
    expect(() => assertConcurrencyDoc('# nothing here', topology)).toThrow(/get-pool/)
  })
})
