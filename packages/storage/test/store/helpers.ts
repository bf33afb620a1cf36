/** Test helpers for the store suites: the compliance suite's helpers and the canonical `flipByte`. */
export { bytes, chunked, collect, concat, listAll, once, readUntilError, rejection, rng } from '../../src/store/compliance-helpers.js'
export { flipByte } from '../../src/store/testing.js'
