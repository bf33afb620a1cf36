import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createServiceHost, isRonError, type ServiceHost, type Topology } from '@ron/core'
import { sampleValue } from '../metrics/prom-text.js'

const topology: Topology = { service: 'svc', tasks: [], channels: [] }
const schema = z.strictObject({
  port: z.number().int().default(7701),
  limits: z.strictObject({ maxItems: z.number().int().positive().default(10), names: z.array(z.string()).default([]) }).prefault({}),
})
type Cfg = z.infer<typeof schema>

describe('host config reload (SPEC.md 3.3b)', () => {
  const hosts: ServiceHost<Cfg>[] = []
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.service.close()
  })
  function mk(input: unknown = {}): ServiceHost<Cfg> {
    const host = createServiceHost<Cfg>({ id: 'svc', version: '1', topology, config: { schema, input, immutable: ['port'] } })
    hosts.push(host)
    return host
  }
  const metric = async (h: ServiceHost<Cfg>, name: string): Promise<number | undefined> => sampleValue(await h.service.metricsText(), name)

  it('registers the three reload metrics at startup', async () => {
    const h = mk()
    expect(await metric(h, 'config_reloads_total')).toBe(0)
    expect(await metric(h, 'config_reload_errors_total')).toBe(0)
    expect(await metric(h, 'config_reload_duration_seconds_count')).toBe(0)
  })

  it('validates, swaps a frozen snapshot atomically and tells the hooks, keeping earlier reloads', async () => {
    const h = mk({ limits: { names: ['a'] } })
    const before = h.config.get()
    expect(before).toEqual({ port: 7701, limits: { maxItems: 10, names: ['a'] } })
    expect(Object.isFrozen(before.limits)).toBe(true)
    const seen: unknown[] = []
    h.onReload((partial) => {
      seen.push([partial, h.config.get().limits.maxItems])
    })
    const changed = h.config.changed()
    await h.service.reload({ limits: { maxItems: 20 } })
    expect((await changed).limits.maxItems).toBe(20)
    await h.service.reload({ limits: { names: ['b'] } })
    expect(h.config.get()).toEqual({ port: 7701, limits: { maxItems: 20, names: ['b'] } })
    expect(before.limits.maxItems).toBe(10)
    expect(seen).toEqual([[{ limits: { maxItems: 20 } }, 20], [{ limits: { names: ['b'] } }, 20]])
    expect(await metric(h, 'config_reloads_total')).toBe(2)
    expect(await metric(h, 'config_reload_duration_seconds_count')).toBe(2)
  })

  it('refuses an invalid value with a ConfigError naming the key, and changes nothing', async () => {
    const h = mk()
    let called = false
    h.onReload(() => {
      called = true
    })
    const err = await h.service.reload({ limits: { maxItems: -1 } }).catch((e: unknown) => e)
    expect(isRonError(err, 'Malformed')).toBe(true)
    expect((err as { details: { path: string } }).details.path).toBe('limits.maxItems')
    expect(called).toBe(false)
    expect(h.config.get().limits.maxItems).toBe(10)
    expect(await metric(h, 'config_reload_errors_total')).toBe(1)
    await expect(h.service.reload('nope')).rejects.toSatisfy((e) => isRonError(e, 'Malformed'))
  })

  it('refuses a change to an immutable key, but accepts the same value again', async () => {
    const h = mk({ port: 9000 })
    const err = await h.service.reload({ port: 9001 }).catch((e: unknown) => e)
    expect(isRonError(err, 'Malformed')).toBe(true)
    expect((err as { details: unknown }).details).toEqual({ path: 'port', reason: 'immutable' })
    await h.service.reload({ port: 9000, limits: { maxItems: 3 } })
    expect(h.config.get()).toMatchObject({ port: 9000, limits: { maxItems: 3 } })
  })

  it('rolls back whole when a hook fails: previous snapshot, and the hooks that ran get the previous values', async () => {
    const h = mk()
    const applied: unknown[] = []
    h.onReload((p) => {
      applied.push(['first', p])
    })
    h.onReload((p) => {
      applied.push(['second', p])
      if ((p as Cfg).limits.maxItems === 99) throw new Error('cannot resize')
    })
    const err = await h.service.reload({ limits: { maxItems: 99 } }).catch((e: unknown) => e)
    expect(isRonError(err, 'Internal')).toBe(true)
    expect(h.config.get().limits.maxItems).toBe(10)
    expect(applied).toEqual([
      ['first', { limits: { maxItems: 99 } }],
      ['second', { limits: { maxItems: 99 } }],
      ['second', { limits: { maxItems: 10 } }],
      ['first', { limits: { maxItems: 10 } }],
    ])
    expect(await metric(h, 'config_reload_errors_total')).toBe(1)
    // The next reload starts from the rolled-back input.
    await h.service.reload({ limits: { names: ['x'] } })
    expect(h.config.get().limits).toEqual({ maxItems: 10, names: ['x'] })
  })

  it('runs reloads one at a time in call order', async () => {
    const h = mk()
    const order: number[] = []
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let firstStarted!: () => void
    const started = new Promise<void>((r) => (firstStarted = r))
    h.onReload(async (p) => {
      const n = (p as Cfg).limits.maxItems
      order.push(n)
      if (n === 1) {
        firstStarted()
        await gate
      }
    })
    const a = h.service.reload({ limits: { maxItems: 1 } })
    const b = h.service.reload({ limits: { maxItems: 2 } })
    await started
    expect(order).toEqual([1])
    release()
    await Promise.all([a, b])
    expect(order).toEqual([1, 2])
    expect(h.config.get().limits.maxItems).toBe(2)
  })

  it('refuses reloads after close() with Closed', async () => {
    const h = mk()
    await h.service.close()
    await expect(h.service.reload({})).rejects.toSatisfy((e) => isRonError(e, 'Closed'))
  })

  it('works without a schema: hooks run and the snapshot is the merged partial', async () => {
    const host = createServiceHost({ id: 'svc', version: '1', topology })
    hosts.push(host as ServiceHost<Cfg>)
    let got: unknown
    host.onReload((p) => {
      got = p
    })
    await host.service.reload({ a: 1 })
    expect(got).toEqual({ a: 1 })
    expect(host.config.get()).toEqual({ a: 1 })
  })
})
