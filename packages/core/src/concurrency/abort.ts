/**
 * The abort helpers, re-exported where the concurrency primitives (and `http/sse.ts`) import
 * them. They live in the base layer (`src/abort.ts`) because the `Clock` below
 * concurrency waits through them too.
 *
 * @module
 */

export * from '../abort.js'
