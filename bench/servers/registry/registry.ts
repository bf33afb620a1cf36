/**
 * The registry on its defaults, plus a data directory and a signer set: options `{ dir, signers }`.
 * A test issuer's token with the propose, approve and commit scopes is in `extra.token`.
 */
import { serve } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createRegistryService, type SignerSet } from '@ron/registry'
import type { ServerFactory } from '../../lib/server-child.js'
import { ORIGIN } from './shared.js'

const start: ServerFactory = async (options) => {
  // String(undefined) would be a directory named "undefined" in the working tree.
  if (typeof options.dir !== 'string') throw new Error('registry.ts needs options.dir (a data directory)')
  const issuer = createTestIssuer()
  const svc = await createRegistryService({ dataDir: options.dir, origin: ORIGIN, signers: options.signers as SignerSet, auth: { keys: issuer.keys } })
  const server = await serve(svc, { port: 0 })
  const token = issuer.mint({ scope: ['registry:propose', 'registry:approve', 'registry:commit'], aud: 'registry', ttlSec: 86_400 })
  return {
    url: server.url,
    extra: { token },
    close: async () => {
      await server.close()
      await svc.close()
    },
  }
}
export default start
