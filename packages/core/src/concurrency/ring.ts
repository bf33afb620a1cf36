/**
 * Fixed-capacity ring buffer shared by the queue and the broadcast. Internal.
 *
 * @module
 * @internal
 */

import { RonUsageError } from '../errors.js'

/** O(1) push/shift ring of at most `capacity` items. @internal */
export class Ring<T> {
  readonly #buf: (T | undefined)[]
  #head = 0
  #size = 0

  constructor(readonly capacity: number) {
    this.#buf = new Array<T | undefined>(capacity)
  }

  get size(): number {
    return this.#size
  }

  get full(): boolean {
    return this.#size >= this.capacity
  }

  /** Appends; the caller checks `full` first. */
  push(item: T): void {
    this.#buf[(this.#head + this.#size) % this.capacity] = item
    this.#size++
  }

  /** Removes and returns the oldest item, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined
    const item = this.#buf[this.#head]
    this.#buf[this.#head] = undefined
    this.#head = (this.#head + 1) % this.capacity
    this.#size--
    return item
  }

  clear(): void {
    this.#buf.fill(undefined)
    this.#head = 0
    this.#size = 0
  }
}

/** Validates a capacity option. @internal */
export function checkCapacity(capacity: number, what: string): void {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RonUsageError('RON_INVALID_OPTION', `${what}: capacity must be an integer >= 1, got ${capacity}`)
}
