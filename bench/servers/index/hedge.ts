/**
 * An index whose five peers (same process) stall 400 ms on 10 % of their answers, hedging on
 * (`options.hedge: true`, β = 2) or off (β = 0); α = 1, `resolverWorkers` 16 (changed defaults).
 */
import { createServer } from 'node:http'
import { HttpTransport, serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexService } from '@ron/index'
import type { ServerFactory } from '../../lib/server-child.js'
import { announceTo, closeServer, listen } from './shared.js'

const start: ServerFactory = async (options) => {
  const issuer = createTestIssuer()
  // Five peer indexes with a latency tail, and the index under test.
  const closers: Array<() => Promise<void>> = []
  const peers: string[] = []
  let seed = 12345
  const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  for (let i = 0; i < 5; i++) {
    const peer = await createIndexService({ amnesia: true, auth: { keys: issuer.keys } })
    const server = createServer((req, res) => {
      if (random() < 0.1) setTimeout(() => peer.handle(req, res), 400)
      else peer.handle(req, res)
    })
    const url = await listen(server)
    await announceTo(issuer, url)
    peers.push(url)
    closers.push(async () => (await closeServer(server), await peer.close()))
  }
  const transport = new HttpTransport()
  const svc = await createIndexService({ amnesia: true, resolverWorkers: 16, peers: { targets: peers, alpha: 1, beta: options.hedge === true ? 2 : 0 } }, transport)
  const s = await serve(svc)
  return {
    url: s.url,
    close: async () => {
      await s.close()
      await svc.close()
      await transport.close()
      for (const c of closers) await c()
    },
  }
}
export default start
