/**
 * The steps `startNode` is made of (issue 21 item 6), each on its own: the option checks, the
 * auth wiring, the service creation loop and the running handle.
 */

import { HttpTransport, MemoryTransport, generateIssuerKey, newNodeId, noopLogger, signToken, systemClock, type RonService } from '@ron/core'
import { deferred } from '@ron/core/testing'
import { createPassportService } from '@ron/passport'
import { afterEach, describe, expect, it } from 'vitest'
import { CliError, ExitCode } from '../src/exit-codes.js'
import { startNodeAuth, type NodeAuth } from '../src/node/auth.js'
import { nodeSettings } from '../src/node/context.js'
import { createServices } from '../src/node/create.js'
import { nodeHandle } from '../src/node/handle.js'
import { bindServiceListeners, closeServiceSlots, type ServiceSlot } from '../src/node/listeners.js'
import { planStart } from '../src/node/plan.js'
import type { ServiceContext, ServiceFactory } from '../src/services.js'

describe('planStart', () => {
  it('hosts what is asked minus what is used on another node, and refuses bad combinations as usage errors', () => {
    const p = planStart({ amnesia: true, services: ['storage', 'passport', 'registry'], registryUrl: 'http://r:7702//', peers: ['http://a:7700', 'http://a:7700/'] })
    expect(p.wanted).toEqual(['storage', 'passport'])
    expect(p.remote).toEqual({ registry: 'http://r:7702' })
    expect(p.peerAdmins).toHaveLength(1)
    expect(p.drainDeadlineMs).toBe(3000)
    const refused = (o: Parameters<typeof planStart>[0]): unknown => {
      try {
        planStart(o)
      } catch (e) {
        return e instanceof CliError ? [e.exitCode, e.message] : e
      }
      return 'accepted'
    }
    expect(refused({ amnesia: true, portBase: 65531 })).toEqual([ExitCode.Usage, expect.stringMatching(/^--port-base/)])
    expect(refused({})).toEqual([ExitCode.Usage, expect.stringMatching(/data directory is required/)])
    expect(refused({ amnesia: true, passportUrl: 'http://p:7703' })).toEqual([ExitCode.Usage, expect.stringMatching(/^passport.url needs a data directory/)])
    expect(refused({ dataDir: '/x', etcd: { endpoints: ['http://e:2379'] }, registryUrl: 'http://r:7702' })).toEqual([ExitCode.Usage, expect.stringMatching(/^with etcd/)])
    expect(refused({ amnesia: true, peers: ['not a url'] })).toEqual([ExitCode.Usage, expect.stringMatching(/^peers: /)])
    expect(refused({ amnesia: true, services: ['storage', 'nope' as never] })).toEqual([ExitCode.Usage, expect.stringMatching(/^service nope is not available/)])
  })

  it('gives every service the node base keys, only those given, under their own sections', () => {
    expect(nodeSettings({ config: { index: { a: 1 } }, storage: { rf: 2 }, http: { maxInflight: 5 } }, 1500)).toEqual({ index: { a: 1 }, storage: { rf: 2 }, drainDeadlineMs: 1500, http: { maxInflight: 5 } })
    expect(nodeSettings({}, 3000)).toEqual({ drainDeadlineMs: 3000 })
  })
})

describe('startNodeAuth', () => {
  let auth: NodeAuth | undefined
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await auth?.close()
    for (const c of closers.splice(0)) await c()
  })
  const need = { audience: 'storage', scope: 'storage:write' }

  it("verifies the node's own service tokens with its issuer key and refuses a node token minted by a foreign key", async () => {
    const nodeId = newNodeId()
    const issuer = generateIssuerKey({ epoch: 1 })
    auth = await startNodeAuth({ nodeId, issuer, nodeKey: generateIssuerKey({ epoch: 1 }), http: new HttpTransport({ breaker: false }), clock: systemClock, logger: noopLogger })
    const own = await auth.tokens.token({ aud: 'storage', scope: ['storage:write'] })
    expect((await auth.verifier.verify(own, need)).sub).toBe(`node:${nodeId}`)
    expect(auth.publicKeys()).toEqual([issuer.publicJwk])
    // A foreign key, even one claiming the issuer's kid, mints nothing the node believes.
    for (const foreign of [generateIssuerKey({ epoch: 1 }), generateIssuerKey({ epoch: 1, kid: issuer.kid })]) {
      const forged = signToken(foreign, { sub: `node:${nodeId}`, aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })
      await expect(auth.verifier.verify(forged, need)).rejects.toMatchObject({ status: 401 })
    }
  })

  it("switches to the node's passport: its keys verify, the issuer key no longer does, and the old token provider is closed", async () => {
    const nodeId = newNodeId()
    const issuer = generateIssuerKey({ epoch: 1 })
    auth = await startNodeAuth({ nodeId, issuer, nodeKey: generateIssuerKey({ epoch: 1 }), http: new HttpTransport({ breaker: false }), clock: systemClock, logger: noopLogger })
    const before = auth.tokens
    const passport = await createPassportService(
      { drainReadWindowMs: 0, policy: { callers: { [`node:${nodeId}`]: { scopes: ['storage:write'], audiences: ['storage'] } } } },
      new MemoryTransport(),
    )
    closers.push(() => passport.close())
    await auth.usePassport(passport)
    expect(auth.passport).toBe(passport)
    const minted = await auth.tokens.token({ aud: 'storage', scope: ['storage:write'] })
    const claims = await auth.verifier.verify(minted, need)
    expect(claims.sub).toBe(`node:${nodeId}`)
    expect(auth.publicKeys().map((k) => (k as { kid: string }).kid)).not.toContain(issuer.kid)
    const byIssuer = signToken(issuer, { sub: `node:${nodeId}`, aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })
    await expect(auth.verifier.verify(byIssuer, need)).rejects.toMatchObject({ status: 401 })
    await expect(before.token({ aud: 'storage', scope: ['storage:write'] })).rejects.toThrow()
  })
})

describe('createServices', () => {
  const slots: ServiceSlot[] = []
  afterEach(async () => {
    await closeServiceSlots(slots.splice(0), noopLogger)
  })

  /** A service that records its close. */
  function fake(name: string, closed: string[]): RonService {
    return { name, close: () => Promise.resolve(void closed.push(name)), health: () => ({ ready: true }) } as unknown as RonService
  }

  it('creates each service after the ones it needs, attaches those that were created next to a failing one, and their slots close them', async () => {
    await bindServiceListeners(['storage', 'registry', 'index', 'interop'], { portBase: 0, host: '127.0.0.1', advertise: undefined, tls: undefined }, slots)
    const closed: string[] = []
    const started: string[] = []
    const registrySlow = deferred<void>()
    const indexFails = deferred<void>()
    const factory = (name: string, body: () => Promise<void> = () => Promise.resolve()): ServiceFactory => ({
      create: async () => {
        started.push(name)
        await body()
        return fake(name, closed)
      },
      reloadPartial: () => ({}),
    })
    const attached: string[] = []
    const attach = (slot: ServiceSlot, service: RonService): void => {
      slot.service = service
      attached.push(slot.name)
    }
    const ctx = { logger: noopLogger } as unknown as ServiceContext
    const creating = createServices(slots, ctx, attach, {
      order: ['index', 'storage', 'registry', 'interop'],
      after: { storage: ['index'] },
      factories: {
        index: factory('index', () => indexFails.promise),
        storage: factory('storage'),
        registry: factory('registry', () => registrySlow.promise),
        interop: factory('interop'),
      },
    })
    const failure = creating.catch((e: unknown) => e)
    // All but storage start at once; storage waits for index.
    await new Promise((r) => setImmediate(r))
    expect(started).toEqual(['index', 'registry', 'interop'])
    const broken = new Error('index store is broken')
    indexFails.reject(broken)
    await new Promise((r) => setImmediate(r))
    // The failure is not thrown while registry is still being created.
    let settled = false
    void failure.then(() => (settled = true))
    await new Promise((r) => setImmediate(r))
    expect(settled).toBe(false)
    registrySlow.resolve()
    const e = await failure
    expect(e).toBe(broken)
    // storage, whose prerequisite failed, was never created; the others are attached.
    expect(started).not.toContain('storage')
    expect(attached.sort()).toEqual(['interop', 'registry'])
    await closeServiceSlots(slots.splice(0), noopLogger)
    expect(closed.sort()).toEqual(['interop', 'registry'])
  })
})

describe('nodeHandle', () => {
  it('runs the shutdown once however often it is closed, and whenReady rejects once the node closes', async () => {
    let accepting = true
    let shutdowns = 0
    let ready = false
    const node = nodeHandle({
      summary: { nodeId: 'n0123456789abcdef', admin: 'http://127.0.0.1:1', services: { storage: 'http://127.0.0.1:2' } },
      issuerKid: 'k',
      identity: { id: 'n0123456789abcdef', publicKey: 'x', sign: () => new Uint8Array() },
      firstStart: true,
      peers: { directory: () => ({}) as never, forget: () => Promise.resolve(false) },
      hosted: () => [{ name: 'storage', service: { health: () => ({ ready, missing: ['store'] }) as never } }],
      accepting: () => accepting,
      reload: () => Promise.resolve({ reloaded: [] }),
      shutdown: () => {
        accepting = false
        shutdowns++
        return Promise.resolve()
      },
      drainDeadlineMs: 100,
      logger: noopLogger,
      clock: systemClock,
    })
    expect(node.ready()).toBe(false)
    ready = true
    expect(node.ready()).toBe(true)
    await node.whenReady()
    ready = false
    const waiting = node.whenReady()
    await Promise.all([node.close(), node.close(), node[Symbol.asyncDispose]()])
    expect(shutdowns).toBe(1)
    await expect(waiting).rejects.toThrow(/closed before it became ready/)
    // The summary is a copy: a caller cannot change the node's.
    node.summary().services['storage'] = 'changed'
    expect(node.summary().services).toEqual({ storage: 'http://127.0.0.1:2' })
  })
})
