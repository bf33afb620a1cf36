/**
 * What `f` throws, or `undefined` when it returns: lets a test assert on a synchronous refusal's
 * type and fields (`expect(thrownBy(() => parse(bad))).toBeInstanceOf(MalformedError)`) without a
 * try/catch per case.
 */
export function thrownBy(f: () => unknown): unknown {
  try {
    f()
  } catch (e) {
    return e
  }
  return undefined
}
