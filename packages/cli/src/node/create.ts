/**
 * The service creation loop: each hosted service created by its entry in the services table
 * (`services.ts`) and attached to its listener; passport alone first (every other service
 * verifies with it), the others at once, each after the services it needs (`CREATE_AFTER`).
 *
 * @module
 */

import type { RonService } from '@ron/core'
import type { ServiceName } from '../ports.js'
import { CREATE_AFTER, CREATE_ORDER, FACTORIES, creationError, type ServiceContext, type ServiceFactory } from '../services.js'
import type { ServiceSlot } from './listeners.js'

/** The table a creation reads: the node's own unless a test gives another. */
export interface CreationTable {
  /** @default FACTORIES */
  factories?: { readonly [K in ServiceName]?: ServiceFactory }
  /** @default CREATE_ORDER */
  order?: readonly ServiceName[]
  /** @default CREATE_AFTER */
  after?: Partial<Record<ServiceName, readonly ServiceName[]>>
}

/**
 * Creates the service of `slot` with `ctx` (and a child logger of its own: a service that freezes
 * its config snapshot must not freeze the logger the others share) and hands it to `attach`.
 * @throws the factory's error as {@link creationError} names it
 */
export async function createService(slot: ServiceSlot, ctx: ServiceContext, attach: (slot: ServiceSlot, service: RonService) => void, table: CreationTable = {}): Promise<RonService> {
  let service: RonService
  try {
    const factory = (table.factories ?? FACTORIES)[slot.name]
    if (factory === undefined) throw new Error(`no factory for ${slot.name}`)
    service = await factory.create({ ...ctx, logger: ctx.logger.child({}) })
  } catch (e) {
    throw creationError(slot.name, e)
  }
  attach(slot, service)
  return service
}

/**
 * Creates every slot's service not attached yet, in the table's order: all at once, each after
 * the ones it needs, so their module loads, key files, stores and fsyncs overlap instead of
 * queueing. Every creation is awaited before a failure is thrown, so a service created next to a
 * failing one is attached (and its slot closes it, `closeServiceSlots`); a service whose
 * prerequisite failed is not created.
 * @throws the first failure in creation order
 */
export async function createServices(slots: readonly ServiceSlot[], ctx: ServiceContext, attach: (slot: ServiceSlot, service: RonService) => void, table: CreationTable = {}): Promise<void> {
  const creating = new Map<ServiceName, Promise<unknown>>()
  for (const name of table.order ?? CREATE_ORDER) {
    const slot = slots.find((s) => s.name === name)
    if (slot === undefined || slot.service !== undefined) continue
    const after = (table.after ?? CREATE_AFTER)[name]?.map((n) => creating.get(n)).filter((x) => x !== undefined) ?? []
    creating.set(
      name,
      Promise.all(after).then(() => createService(slot, ctx, attach, table)),
    )
  }
  const created = await Promise.allSettled(creating.values())
  const failed = created.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}
