/**
 * The whole RON mesh in one process on a MemoryTransport, wired the way `ron-node` wires it:
 * passport first; every service verifies with passport's keys and revocations; service tokens are
 * minted by passport through core's token provider; storage announces to index; interop calls
 * storage, passport and index. Run by `mesh.test.ts`.
 */
import { MemoryTransport, SERVICE_CALL_SCOPES, createTokenProvider, createTokenVerifier, newNodeId } from '@ron/core'
import { createIndexService } from '@ron/index'
import { createInteropService } from '@ron/interop'
import { createPassportService, passportMinter } from '@ron/passport'
import { createStorageService } from '@ron/storage'

export async function startMesh(opts: { githubSecret: string }) {
  const transport = new MemoryTransport()
  // One node: its id has the one form of node ids (n + 16 hex), never a service name. On a
  // MemoryTransport the services' endpoints stay target names.
  const nodeId = newNodeId()
  const passport = await createPassportService(
    { policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] }, [`node:${nodeId}`]: { scopes: [...SERVICE_CALL_SCOPES], audiences: ['storage', 'index'] } } } },
    transport,
  )
  transport.mount('passport', passport)
  const verifier = createTokenVerifier({ keys: passport.keys, revocations: passport.revocations })
  const tokens = createTokenProvider({ minter: passportMinter(passport, { sub: `node:${nodeId}` }) })

  const index = await createIndexService({ amnesia: true, auth: { verifier } }, transport)
  transport.mount('index', index)
  const storage = await createStorageService({ nodeId, advertise: 'storage', auth: { verifier }, tokens, announce: { target: 'index' } }, transport)
  transport.mount('storage', storage)
  const interop = await createInteropService({ amnesia: true, webhooks: { providers: { github: { secrets: [opts.githubSecret] } } } }, transport, { tokens })
  transport.mount('interop', interop)

  const admin = await passport.mintAdminToken({ aud: ['storage', 'index', 'passport', 'interop'], scope: ['storage:write', 'index:write', 'passport:issue', 'passport:revoke'], ttlSec: 3600 })
  return {
    nodeId,
    tokens,
    transport,
    passport,
    storage,
    index,
    interop,
    adminToken: admin.token,
    async close() {
      await interop.close()
      await storage.close()
      await index.close()
      tokens.close()
      await passport.close()
      await transport.close()
    },
  }
}
