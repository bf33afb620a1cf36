/**
 * How many `'abort'` listeners an AbortSignal holds: what a test needs to show that a link, a wait
 * or a request released its hold on a long-lived signal.
 *
 * @module
 */

/**
 * The number of `'abort'` listeners on `signal`, read through Node's internal event-target
 * symbol (`kEvents`); 0 when there are none or the runtime keeps them elsewhere.
 *
 * @example
 * ```ts
 * const link = linkSignals(service.signal, req.signal)
 * link.dispose()
 * expect(abortListenerCount(service.signal)).toBe(0)
 * ```
 */
export function abortListenerCount(signal: AbortSignal): number {
  const sym = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kEvents')
  const events = sym === undefined ? undefined : (signal as unknown as Record<symbol, Map<string, { size: number }> | undefined>)[sym]
  return events?.get('abort')?.size ?? 0
}
