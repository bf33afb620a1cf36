/**
 * The registry's reload coalescing: at most 15 reloads wait in core's queue, later partials merge
 * into one, and a merged reload that is refused is retried part by part (one invalid partial fails
 * only its own caller). Stricter than core's `config.coalesce`, which fails every merged caller.
 *
 * @module
 * @internal
 */

/**
 * Wraps `reload` so that at most 15 reloads wait in core's queue (of 16); later partials merge
 * into one pending reload (the latest value of each key wins), started when a slot frees. When
 * the merged reload is refused, its parts are applied one by one in order, so one invalid partial
 * fails only its own caller and the latest valid values still win.
 */
export function coalescingReload(inner: (partial: unknown) => Promise<void>, onFail: () => void): (partial: unknown) => Promise<void> {
  const SLOTS = 15
  let waiting = 0
  interface Part {
    partial: unknown
    resolve: () => void
    reject: (e: unknown) => void
  }
  let merged: { partial: Record<string, unknown>; parts: Part[] } | undefined
  const next = (): void => {
    const m = merged
    if (m !== undefined && waiting < SLOTS) {
      merged = undefined
      void runMerged(m)
    }
  }
  const run = (partial: unknown): Promise<void> => {
    waiting++
    return inner(partial)
      .catch((e: unknown) => {
        onFail()
        throw e
      })
      .finally(() => {
        waiting--
        next()
      })
  }
  const runMerged = async (m: { partial: Record<string, unknown>; parts: Part[] }): Promise<void> => {
    waiting++
    try {
      try {
        await inner(m.partial)
        for (const p of m.parts) p.resolve()
        return
      } catch (e) {
        if (m.parts.length === 1) {
          onFail()
          m.parts[0]!.reject(e)
          return
        }
      }
      for (const p of m.parts) {
        try {
          await inner(p.partial)
          p.resolve()
        } catch (e) {
          onFail()
          p.reject(e)
        }
      }
    } finally {
      waiting--
      next()
    }
  }
  return (partial) => {
    if (waiting < SLOTS || typeof partial !== 'object' || partial === null) return run(partial)
    const copy = structuredClone(partial as Record<string, unknown>)
    merged ??= { partial: {}, parts: [] }
    deepAssign(merged.partial, structuredClone(copy))
    const m = merged
    return new Promise<void>((resolve, reject) => m.parts.push({ partial: copy, resolve, reject }))
  }
}

function deepAssign(target: Record<string, unknown>, src: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(src)) {
    const t = target[k]
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && typeof t === 'object' && t !== null && !Array.isArray(t)) deepAssign(t as Record<string, unknown>, v as Record<string, unknown>)
    else target[k] = v
  }
}
