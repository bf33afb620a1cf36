/**
 * Entry point of a server under callgrind (see `callgrind.ts`): `node --import tsx
 * tools/callgrind-child.ts <factory module> <options json>` starts the factory and prints one line,
 * `LISTENING <url> <pid> <extra json>`. No IPC: valgrind sits between the parent and node.
 */
import { pathToFileURL } from 'node:url'
import { applyBenchHeapGrowth } from '../lib/heap-setting.js'
import type { ServerFactory } from '../lib/server-child.js'

applyBenchHeapGrowth()
const [factoryPath, optionsJson] = process.argv.slice(2)
const mod = (await import(pathToFileURL(factoryPath!).href)) as { default: ServerFactory }
const server = await mod.default(JSON.parse(optionsJson ?? '{}') as Record<string, unknown>)
process.stdout.write(`LISTENING ${server.url} ${process.pid} ${JSON.stringify(server.extra ?? {})}\n`)
process.once('SIGTERM', () => {
  void server.close().finally(() => process.exit(0))
})
