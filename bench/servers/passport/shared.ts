/** What the passport bench's servers and its suite share. */

/** The policy of every passport the bench starts: one admin caller allowed everything. */
export const POLICY = { callers: { admin: { scopes: ['*'], audiences: ['*'] } } }
