/**
 * One profile tool for every service: `npx tsx bench/tools/profile.ts <service> <case> [args]`
 * starts the server of the case in its own process (through `lib/process.ts`, on the built
 * packages when they are fresh, like the suites), drives it with the case's load, takes a V8 CPU
 * profile of the server while the load runs, and prints its top self-time and inclusive-time
 * functions. The `.cpuprofile` stays in `$TMPDIR/ron-profiles/` for Chrome DevTools.
 *
 * `--help` (or no argument) lists every service and case. For instructions per request on a
 * server's main thread (stable on a busy box), see `tools/callgrind.ts`.
 */
import * as index from './profile/index.js'
import * as interop from './profile/interop.js'
import * as passport from './profile/passport.js'
import * as registry from './profile/registry.js'
import * as storage from './profile/storage.js'

interface Service {
  cases: Record<string, string>
  run(which: string, args: string[]): Promise<void>
}

const SERVICES: Record<string, Service> = {
  core: { cases: storage.coreCases, run: storage.run },
  storage: { cases: storage.storageCases, run: storage.run },
  registry,
  passport,
  index,
  interop,
}

function help(): string {
  const lines = ['usage: npx tsx bench/tools/profile.ts <service> <case> [args]', '']
  for (const [name, s] of Object.entries(SERVICES)) {
    lines.push(`${name}:`)
    for (const [c, what] of Object.entries(s.cases)) lines.push(`  ${c.padEnd(16)} ${what}`)
  }
  return lines.join('\n')
}

const [service, which, ...args] = process.argv.slice(2)
if (service === undefined || service === '--help' || service === '-h' || which === '--help') {
  console.log(help())
} else {
  const s = SERVICES[service]
  if (s === undefined || which === undefined || !(which in s.cases)) {
    console.error(`${s === undefined ? `unknown service ${service}` : `unknown case ${String(which)} of ${service}`}\n\n${help()}`)
    process.exitCode = 2
  } else {
    await s.run(which, args)
  }
}
