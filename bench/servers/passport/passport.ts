/**
 * Passport on its defaults with the bench's policy and the issuer key in `options.keyFile`; an
 * admin token (audiences passport and storage, every scope) in `extra.adminToken`.
 */
import { ALL_SCOPES, serve } from '@ron/core'
import { createPassportService } from '@ron/passport'
import type { ServerFactory } from '../../lib/server-child.js'
import { POLICY } from './shared.js'

const start: ServerFactory = async (options) => {
  const passport = await createPassportService({ issuerKeyFile: String(options.keyFile), policy: POLICY })
  const admin = await passport.mintAdminToken({ aud: ['passport', 'storage'], scope: [...ALL_SCOPES], ttlSec: 3600 })
  const server = await serve(passport, { port: 0 })
  return {
    url: server.url,
    extra: { adminToken: admin.token },
    close: async () => {
      await server.close()
      await passport.close()
    },
  }
}
export default start
