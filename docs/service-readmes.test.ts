/**
 * The five service READMEs follow `docs/service-readme-template.md`: its level-2 headings, in its
 * order, with a package's own sections only between `## Limits` and `## Errors` (the last).
 */
import { describe, expect, it } from 'vitest'
import { readRepoFile } from '@ron/core/testing'

const SERVICES = ['storage', 'registry', 'passport', 'index', 'interop'] as const

/** Level-2 headings outside code fences. */
function headings(markdown: string): string[] {
  const out: string[] = []
  let fence = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence
    else if (!fence && line.startsWith('## ')) out.push(line.slice(3).trim())
  }
  return out
}

// The template's own headings are inside its markdown fence; `<…>` marks the package's own topics.
const template = (() => {
  const text = readRepoFile('docs/service-readme-template.md')
  const fenced = text.slice(text.indexOf('```markdown') + '```markdown'.length, text.lastIndexOf('```'))
  return [...fenced.matchAll(/^## (.+)$/gm)].map((m) => m[1]!.trim())
})()
const OWN = template.findIndex((h) => h.startsWith('<'))
const fixed = template.filter((h) => !h.startsWith('<'))

describe('service READMEs follow docs/service-readme-template.md', () => {
  it('the template names the sections, with one slot for a package\'s own topics before Errors', () => {
    expect(fixed).toEqual(['What it is', 'Embed', 'HTTP API', 'Config', 'Metrics', 'Concurrency', 'Limits', 'Errors'])
    expect(template[OWN + 1]).toBe('Errors')
  })

  for (const service of SERVICES) {
    it(`packages/${service}/README.md has the template's headings in order`, () => {
      const readme = readRepoFile(`packages/${service}/README.md`)
      expect(readme.split('\n')[0]).toBe(`# @ron/${service}`)
      const h = headings(readme)
      const before = fixed.slice(0, OWN)
      // The template's sections up to Limits come first, in order, with nothing between them.
      expect(h.slice(0, before.length)).toEqual(before)
      // Errors is the last section; the package's own topics are the ones between.
      expect(h[h.length - 1]).toBe('Errors')
      const own = h.slice(before.length, -1)
      for (const o of own) expect(fixed, `'## ${o}' is a template heading out of place`).not.toContain(o)
    })

    it(`packages/${service}/README.md's Embed has a code example, HTTP API and Limits a table, Concurrency points at docs/CONCURRENCY.md`, () => {
      const readme = readRepoFile(`packages/${service}/README.md`)
      const section = (name: string): string => {
        const start = readme.indexOf(`\n## ${name}\n`)
        const next = readme.indexOf('\n## ', start + 1)
        return readme.slice(start, next === -1 ? undefined : next)
      }
      expect(section('Embed')).toMatch(/```ts\n[\s\S]*create\w+Service\(/)
      expect(section('HTTP API')).toMatch(/^\| `?(route|method)/m)
      expect(section('Config')).toContain('docs/configuration.md#')
      expect(section('Concurrency')).toContain('docs/CONCURRENCY.md')
      expect(section('Limits')).toMatch(/^\| limit \| key \(default\) \| refusal \|$/m)
    })
  }
})
