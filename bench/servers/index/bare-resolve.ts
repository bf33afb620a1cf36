/** The resolve baseline of the index: bare `node:http` answering `GET /resolve/<ADDRESS>` with the JSON the index answers. */
import { createServer } from 'node:http'
import type { ServerFactory } from '../../lib/server-child.js'
import { ADDRESS, ANSWER, closeServer, listen } from './shared.js'

const start: ServerFactory = async () => {
  const body = JSON.stringify(ANSWER)
  const server = createServer((req, res) => {
    if (req.url === `/resolve/${ADDRESS}`) res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(body)
    else res.writeHead(404).end()
  })
  const url = await listen(server)
  return { url, close: () => closeServer(server) }
}
export default start
