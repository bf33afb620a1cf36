/**
 * The verification baseline of passport: bare `node:http` answering `POST /v1/passport/verify`
 * with core's token verifier and the issuer key in `options.keyFile` (the same JSON out).
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { RevocationSet, createTokenVerifier, importIssuerKey, isRonError, staticKeySource } from '@ron/core'
import type { ServerFactory } from '../../lib/server-child.js'
import { readBody } from '../read-body.js'

const start: ServerFactory = async (options) => {
  const key = importIssuerKey(readFileSync(String(options.keyFile), 'utf8'))
  const verifier = createTokenVerifier({ keys: staticKeySource([key]), revocations: new RevocationSet() })
  const server = createServer((req, res) => {
    void (async () => {
      let out: unknown
      try {
        const body = JSON.parse((await readBody(req)).toString('utf8')) as { token: string; aud?: string }
        out = { valid: true, claims: await verifier.verify(body.token, body.aud === undefined ? { audience: '', anyAudience: true } : { audience: body.aud }) }
      } catch (e) {
        out = { valid: false, reason: isRonError(e) ? e.details['reason'] : 'malformed' }
      }
      const text = JSON.stringify(out)
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}
export default start
