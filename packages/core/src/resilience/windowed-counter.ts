/**
 * Rolling window of time buckets. Internal.
 *
 * @module
 * @internal
 */

/** Sums of `width` counters over a rolling window of `buckets` time slices. @internal */
export class WindowedCounter {
  readonly #bucketMs: number
  readonly #slots: number[][]
  readonly #epochs: number[]

  constructor(
    windowMs: number,
    readonly width: number,
    buckets = 10,
  ) {
    this.#bucketMs = Math.max(1, windowMs / buckets)
    this.#slots = Array.from({ length: buckets }, () => new Array<number>(width).fill(0))
    this.#epochs = new Array<number>(buckets).fill(-1)
  }

  /** Adds `by` to counter `index` at time `now`. */
  add(now: number, index: number, by = 1): void {
    const epoch = Math.floor(now / this.#bucketMs)
    const i = epoch % this.#slots.length
    const slot = this.#slots[i]!
    if (this.#epochs[i] !== epoch) {
      slot.fill(0)
      this.#epochs[i] = epoch
    }
    slot[index] = (slot[index] ?? 0) + by
  }

  /** Sum of counter `index` over the buckets still inside the window at `now`. */
  sum(now: number, index: number): number {
    const epoch = Math.floor(now / this.#bucketMs)
    const oldest = epoch - this.#slots.length + 1
    let total = 0
    for (let i = 0; i < this.#slots.length; i++) {
      const e = this.#epochs[i]!
      if (e >= oldest && e <= epoch) total += this.#slots[i]![index] ?? 0
    }
    return total
  }

  reset(): void {
    for (const s of this.#slots) s.fill(0)
    this.#epochs.fill(-1)
  }
}
