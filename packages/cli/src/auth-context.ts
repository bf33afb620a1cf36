/**
 * Which node a client command talked to and where its token came from, so that a refusal (401)
 * says both. A CLI run is one command in one process: the last noted values are the ones used.
 * No imports: `cli.ts` reads it when printing an error.
 *
 * @module
 */

let node: string | undefined
let tokenSource: string | undefined

/** Notes the node URL a command is about to talk to. */
export function noteNode(url: string): void {
  node = url
}

/** Notes where the token presented came from (`--token`, `RON_TOKEN`, a file path, discovered). */
export function noteTokenSource(source: string): void {
  tokenSource = source
}

/** ` (node <url>, token from <source>)`, or '' when nothing was noted. */
export function authContext(): string {
  if (node === undefined && tokenSource === undefined) return ''
  return ` (node ${node ?? '?'}, token from ${tokenSource ?? 'nowhere: none was sent'})`
}
