/**
 * Pinned peers (SPEC.md §5 "Peers"): the `{nodeId, nodeKey}` a peer's admin URL first answered
 * with (or that the shared passport's enrolment gave), kept in `<data dir>/pins.json` (mode 0600,
 * written durably: temporary file, fsync, rename, fsync of the directory) or, in amnesia mode, in
 * memory. A peer whose id or key no longer matches its pin is refused until an operator forgets
 * the pin (`ron-node peers forget <url>`).
 *
 * @module
 */

import { randomUUID } from 'node:crypto'
import { open, readFile, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { isNodeId, nodePublicKey } from '@ron/core'
import { errnoText } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'

/** How a pin came about. */
export type PinSource = 'first-contact' | 'enrolment'

/** One pinned peer. */
export interface Pin {
  /** The peer's admin URL (normalised, no trailing slash). */
  admin: string
  /** Its node id (`n` + 16 hex). */
  nodeId: string
  /** Its public node key, base64url raw Ed25519. */
  nodeKey: string
  /** When it was pinned (Unix ms). */
  pinnedAt: number
  /** First contact (trust on first use) or the shared passport's enrolment. */
  source: PinSource
}

/** What `pins.json` holds. */
export interface PinsFile {
  version: 1
  pins: Pin[]
}

/** The file name of the pins in a data directory. */
export const PINS_FILE = 'pins.json'

function validPin(p: unknown): p is Pin {
  const x = p as Partial<Pin> | null
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof x.admin === 'string' &&
    isNodeId(x.nodeId) &&
    typeof x.nodeKey === 'string' &&
    nodePublicKey(x.nodeKey) !== undefined &&
    typeof x.pinnedAt === 'number' &&
    (x.source === 'first-contact' || x.source === 'enrolment')
  )
}

/** Writes `text` to `path` durably with mode 0600: unguessable temporary file, fsync, rename, fsync of the directory. */
export async function writeDurable(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`
  let created = false
  try {
    const fh = await open(tmp, 'wx', 0o600)
    created = true
    try {
      await fh.writeFile(text)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
    created = false
    const dir = await open(dirname(path), 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
  } catch (e) {
    if (created) await rm(tmp, { force: true })
    throw new CliError(`cannot write ${path}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
  }
}

/** The pins of a node, by admin URL. */
export class PinStore {
  readonly #file: string | undefined
  readonly #pins = new Map<string, Pin>()
  #writes: Promise<void> = Promise.resolve()

  private constructor(file: string | undefined) {
    this.#file = file
  }

  /**
   * Opens the pins of `file` (undefined: in memory, amnesia).
   * @throws {@link CliError} when the file exists but cannot be read or is not a valid pins file:
   *   starting without the pins would trust every peer afresh, so the operator decides.
   */
  static async open(file: string | undefined): Promise<PinStore> {
    const store = new PinStore(file)
    if (file === undefined) return store
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (e) {
      if ((e as { code?: unknown }).code === 'ENOENT') return store
      throw new CliError(`cannot read ${file}: ${errnoText(e)}`, ExitCode.Error, { cause: e })
    }
    let parsed: Partial<PinsFile>
    try {
      parsed = JSON.parse(text) as Partial<PinsFile>
    } catch (e) {
      throw new CliError(`${file} is not JSON; restore it, or remove it to pin every peer again at its next contact`, ExitCode.Error, { cause: e })
    }
    if (parsed.version !== 1 || !Array.isArray(parsed.pins) || !parsed.pins.every(validPin)) {
      throw new CliError(`${file} is not a valid pins file (expected {"version":1,"pins":[{admin,nodeId,nodeKey,pinnedAt,source}]}); restore it, or remove it to pin every peer again at its next contact`, ExitCode.Error)
    }
    for (const p of parsed.pins) store.#pins.set(p.admin, { ...p })
    return store
  }

  /** Where the pins are kept (undefined in amnesia mode). */
  get file(): string | undefined {
    return this.#file
  }

  /** The pin of the peer at `admin`. */
  get(admin: string): Pin | undefined {
    return this.#pins.get(admin)
  }

  /** The pin holding `nodeId`, whichever admin URL it is for. */
  byId(nodeId: string): Pin | undefined {
    for (const p of this.#pins.values()) if (p.nodeId === nodeId) return p
    return undefined
  }

  /** Every pin. */
  list(): Pin[] {
    return [...this.#pins.values()].map((p) => ({ ...p }))
  }

  /** Pins (or re-pins) a peer, durably before it resolves. */
  async pin(pin: Pin): Promise<void> {
    this.#pins.set(pin.admin, { ...pin })
    await this.#save()
  }

  /** Forgets the pin of `admin`, durably before it resolves; false when there was none. */
  async forget(admin: string): Promise<boolean> {
    if (!this.#pins.delete(admin)) return false
    await this.#save()
    return true
  }

  /** Writes the pins one at a time, each with the state at its start (the last has everything). */
  #save(): Promise<void> {
    const file = this.#file
    if (file === undefined) return Promise.resolve()
    const write = (): Promise<void> => writeDurable(file, `${JSON.stringify({ version: 1, pins: this.list() } satisfies PinsFile, null, 2)}\n`)
    const run = this.#writes.then(write, write)
    this.#writes = run.catch(() => undefined)
    return run
  }
}
