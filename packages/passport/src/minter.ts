/**
 * {@link TokenMinter}s backed by passport, so core's token provider can mint service-to-service
 * tokens through it: {@link passportMinter} in process (the node's own passport), and
 * {@link remotePassportMinter} by client assertion (another node's passport).
 *
 * @module
 */

import { signClientAssertion, type Clock, type IssuerKey, type MintRequest, type TokenMinter, type Transport } from '@ron/core'
import { createPassportClient } from './client.js'
import type { PassportService } from './service.js'

/**
 * Mints through a passport hosted in this process (`sub` e.g. `node:<id>`), within its policy's
 * max ttl, through its issuance pool.
 *
 * @example
 * ```ts
 * const provider = createTokenProvider({ minter: passportMinter(passport, { sub: `node:${nodeId}` }) })
 * const token = await provider.token({ aud: 'index', scope: ['index:announce'] })
 * ```
 */
export function passportMinter(passport: Pick<PassportService, 'mintServiceToken'>, options: { sub: string }): TokenMinter {
  return {
    async mint(req: MintRequest, signal?: AbortSignal) {
      return (await passport.mintServiceToken({ sub: options.sub, aud: req.aud, scope: req.scope, ttlSec: req.ttlSec }, signal)).token
    },
  }
}

/** Options of {@link remotePassportMinter}. */
export interface RemotePassportMinterOptions {
  /** This node's id (enrolled with that passport). */
  nodeId: string
  /** This node's key (its public half enrolled with that passport). */
  nodeKey: IssuerKey
  /** Transport target of the passport. @default 'passport' */
  target?: string
  /** The assertion's audience: that passport's id. @default 'passport' */
  audience?: string
  /** @default systemClock */
  clock?: Clock
}

/**
 * Mints by trading a one-minute client assertion signed with the node key for a service token
 * at another node's passport (`POST /v1/passport/token`).
 *
 * @example
 * ```ts
 * const minter = remotePassportMinter(transport, { nodeId: 'n2', nodeKey })
 * const provider = createTokenProvider({ minter })
 * ```
 */
export function remotePassportMinter(transport: Transport, options: RemotePassportMinterOptions): TokenMinter {
  const client = createPassportClient(transport, { target: options.target ?? 'passport' })
  return {
    async mint(req: MintRequest, signal?: AbortSignal) {
      const assertion = signClientAssertion(options.nodeKey, {
        nodeId: options.nodeId,
        audience: options.audience ?? 'passport',
        ...(options.clock === undefined ? {} : { clock: options.clock }),
      })
      return (await client.exchange({ assertion, aud: req.aud, scope: req.scope }, signal)).token
    },
  }
}
