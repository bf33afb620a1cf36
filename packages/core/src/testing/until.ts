/**
 * Lets the event loop turn until `cond` holds: a test waits for a state, never for a time. Work that
 * crosses a worker thread, the file system or another process keeps its own pace on a loaded
 * machine, so the bound is wall-clock time (default 20 s), not a count of turns; reaching it fails
 * with `what` in the message instead of hanging the test.
 *
 * @param cond - checked before every turn; may be async (a metrics read).
 * @param what - the state waited for, for the failure message.
 * @param timeoutMs - how long to keep turning before failing.
 */
export async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const giveUpAt = performance.now() + timeoutMs
  while (!(await cond())) {
    if (performance.now() > giveUpAt) throw new Error(`never happened in ${timeoutMs} ms: ${what}`)
    await new Promise<void>((r) => setImmediate(r))
  }
}
