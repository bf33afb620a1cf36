/** Just enough of the untyped benchmark tools' APIs for the load generator and baselines. */
declare module 'autocannon' {
  interface Histogram {
    average: number
    total: number
    p50: number
    p97_5: number
    p99: number
  }
  interface Result {
    duration: number
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
  }
  interface Options {
    url: string
    connections?: number
    duration?: number
    amount?: number
    method?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Per-request settings; `setupRequest` may change each request before it is sent. */
    requests?: Array<{ setupRequest?: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer } }>
  }
  function autocannon(opts: Options): Promise<Result>
  export default autocannon
}

declare module 'serve-handler' {
  import type { IncomingMessage, ServerResponse } from 'node:http'
  function serveHandler(req: IncomingMessage, res: ServerResponse, options?: Record<string, unknown>): Promise<void>
  export default serveHandler
}
