/** Reads a request body whole (for the bare `node:http` baselines). */
import type { IncomingMessage } from 'node:http'

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}
