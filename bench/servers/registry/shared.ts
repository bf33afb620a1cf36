/** What the registry bench's servers and its suite share. */

/** The log origin of every registry (and floor) the bench starts. */
export const ORIGIN = 'bench.ron/registry'
