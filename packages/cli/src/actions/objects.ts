/**
 * Object commands beyond put/get: `stat`, `ls`, `pin`, `unpin`, and the name commands `name set`
 * and `resolve`.
 *
 * @module
 */

import { isRonError, parseAddress, parseName, throwIfError, type Address } from '@ron/core'
import { connectTo, discoverService, output, resolveNodeUrl, type ClientOptions } from '../client.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { formatBytes } from '../progress.js'
import { refreshName, siteUrls } from './publish.js'

/** Options shared by these commands. */
export interface ObjectArgs extends ClientOptions {
  json?: boolean | undefined
}

/** The text form of an object's status: one `key  value` line each, no JSON. */
export function statText(st: import('@ron/storage').ObjectStatus, now = Date.now()): string {
  const local = st.local.present ? (st.local.ok ? 'present, verified' : `present, CORRUPT (${st.local.badChunks.length} bad chunk${st.local.badChunks.length === 1 ? '' : 's'}${st.local.reason === undefined ? '' : `: ${st.local.reason}`})`) : 'absent'
  const replicas = st.replicas.map((r) => `${r.node} ${r.present === null ? '(unknown)' : r.present ? '(has it)' : '(missing)'}`)
  const repair = st.repair === null ? 'none' : `${st.repair.state}${st.repair.action === undefined ? '' : ` (${String(st.repair.action)})`}, ${Math.max(0, Math.round((now - st.repair.at) / 1000))} s ago${st.repair.error === undefined ? '' : `: ${st.repair.error}`}`
  return [
    `address    ${st.address}`,
    `size       ${formatBytes(st.size)}${st.size >= 1024 ? ` (${st.size} bytes)` : ''}`,
    `pinned     ${st.pinned ? 'yes' : 'no'}`,
    `local      ${local}`,
    `placement  ${st.placement.length === 0 ? '(none)' : st.placement.join(', ')}`,
    `replicas   ${replicas.length === 0 ? '(none)' : replicas.join(', ')}`,
    `repair     ${repair}`,
  ].join('\n')
}

/** `stat <address>`: size, pins, integrity and repair state of an object on the node's storage (text, or JSON with `--json`). */
export async function statCommand(args: ObjectArgs & { address: string }, out: NodeJS.WritableStream): Promise<void> {
  const address = parseAddress(args.address, 'address')
  const { createStorageClient } = await import('@ron/storage')
  const conn = await connectTo(args, 'storage', false)
  try {
    const client = createStorageClient(conn.transport, { target: 'storage', ...(conn.token === undefined ? {} : { token: conn.token }) })
    const st = await client.status(address)
    output(out, args.json, st, statText(st))
  } finally {
    await conn.close()
  }
}

/** `ls`: objects and pins on the node's storage (scope `storage:admin`), a page at a time. */
export async function lsCommand(args: ObjectArgs & { limit?: number | undefined; cursor?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const conn = await connectTo(args, 'storage', true)
  try {
    const q = new URLSearchParams()
    if (args.limit !== undefined) q.set('limit', String(args.limit))
    if (args.cursor !== undefined) q.set('cursor', args.cursor)
    const res = await conn.transport.request('storage', { method: 'GET', path: `/o${q.size > 0 ? `?${q.toString()}` : ''}`, headers: { authorization: `Bearer ${conn.token!}` } })
    await throwIfError(res)
    const page = await res.json<{ objects: { address: string; size?: number; pinned?: boolean }[]; cursor: string | null }>()
    const lines = page.objects.map((o) => `${o.address}  ${String(o.size ?? '?').padStart(12)}${o.pinned === true ? '  pinned' : ''}`)
    if (page.cursor !== null) lines.push(`(more: --cursor ${page.cursor})`)
    output(out, args.json, page, lines.length > 0 ? lines.join('\n') : '(no objects)')
  } finally {
    await conn.close()
  }
}

/** `pin <address>` / `unpin <address>` (scope `storage:write`). */
export async function pinCommand(args: ObjectArgs & { address: string; unpin?: boolean }, out: NodeJS.WritableStream): Promise<void> {
  const address = parseAddress(args.address, 'address')
  const { createStorageClient } = await import('@ron/storage')
  const conn = await connectTo(args, 'storage', true)
  try {
    const client = createStorageClient(conn.transport, { target: 'storage', token: conn.token! })
    if (args.unpin === true) await client.unpin(address)
    else await client.pin(address)
    output(out, args.json, { address, pinned: args.unpin !== true }, `${args.unpin === true ? 'unpinned' : 'pinned'} ${address}`)
  } finally {
    await conn.close()
  }
}

/**
 * `name set <name> <address>`: binds a name (SPEC §6a) to a manifest. By default `address` is the
 * content: a manifest `{content, size, type}` is stored first and the name bound to it;
 * `--manifest` binds `address` as is. `--expect-previous` makes it a compare-and-set.
 */
export async function nameSetCommand(
  args: ObjectArgs & { name: string; address: string; manifest?: boolean | undefined; type?: string | undefined; expectPrevious?: string | undefined },
  out: NodeJS.WritableStream,
): Promise<void> {
  const address = parseAddress(args.address, 'address')
  const { createStorageClient } = await import('@ron/storage')
  const { createIndexClient } = await import('@ron/index')
  let manifestAddress: string = address
  let manifest: unknown
  let manifestBytes: Uint8Array | undefined
  if (args.manifest !== true) {
    const st = await connectTo(args, 'storage', true)
    try {
      const storage = createStorageClient(st.transport, { target: 'storage', token: st.token! })
      const head = await storage.head(address)
      if (head === undefined) throw new CliError(`${address} is not stored on this node: put it first (ron-node put <file>)`, ExitCode.NotFound)
      manifest = { content: address, size: head.size, type: args.type ?? 'application/octet-stream' }
      manifestBytes = new TextEncoder().encode(JSON.stringify(manifest))
      manifestAddress = (await storage.put(manifestBytes)).address
    } finally {
      await st.close()
    }
  }
  let ix = await connectTo(args, 'index', true)
  const asked = ix.url
  try {
    const expected = args.expectPrevious === undefined ? {} : { expectedPrevious: args.expectPrevious === 'none' ? null : args.expectPrevious }
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await createIndexClient(ix.transport, { token: ix.token! }).setName(args.name, manifestAddress, expected)
        if (attempt > 0) await refreshName(asked, args.name, ix.token!)
        output(out, args.json, { name: args.name, manifestAddress, ...(manifest === undefined ? {} : { manifest }), result }, `${args.name} → ${manifestAddress}`)
        return
      } catch (e) {
        // SPEC §6a: a name is written at its home, with the user's own token (nodes never forward).
        const d = isRonError(e, 'Conflict') ? (e.details as { reason?: unknown; home?: unknown }) : undefined
        if (d?.reason !== 'home_elsewhere' || typeof d.home !== 'string' || attempt > 0) throw e
        await ix.close()
        // The home's index checks the manifest in the home's own storage: store it there too.
        if (manifestBytes !== undefined) {
          const st = await connectTo({ ...args, node: d.home }, 'storage', true)
          try {
            const storage = createStorageClient(st.transport, { target: 'storage', token: st.token! })
            if ((await storage.head(manifestAddress)) === undefined) await storage.put(manifestBytes)
          } finally {
            await st.close()
          }
        }
        ix = await connectTo({ ...args, node: d.home }, 'index', true)
      }
    }
  } finally {
    await ix.close()
  }
}

/** `resolve <name|address>`: the manifest and providers of a name, or the providers of an address. */
export async function resolveCommand(args: ObjectArgs & { key: string }, out: NodeJS.WritableStream): Promise<void> {
  const { createIndexClient } = await import('@ron/index')
  const ix = await connectTo(args, 'index', false)
  try {
    const index = createIndexClient(ix.transport, {})
    const r = await index.resolve(args.key)
    const o = r as unknown as { manifestAddress?: string; kind?: string; manifest?: { content?: string; size?: number; type?: string }; providers?: { endpoint?: string; node?: string }[] }
    const lines = [
      ...(o.manifestAddress === undefined ? [] : [`manifest   ${o.manifestAddress}${o.kind === 'dir' ? '  (a directory)' : ''}`]),
      ...(o.manifest?.content === undefined ? [] : [`content    ${o.manifest.content}  (${o.manifest.size ?? '?'} bytes, ${o.manifest.type ?? '?'})`]),
      ...(o.providers ?? []).map((p) => `provider   ${p.endpoint ?? '?'}  (${p.node ?? '?'})`),
    ]
    output(out, args.json, r, lines.length > 0 ? lines.join('\n') : JSON.stringify(r))
  } finally {
    await ix.close()
  }
}

/** `name ls [--prefix] [--limit] [--cursor]`: the names homed on the node, a page at a time (public). */
export async function nameLsCommand(args: ObjectArgs & { prefix?: string | undefined; limit?: number | undefined; cursor?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const { createIndexClient } = await import('@ron/index')
  const ix = await connectTo(args, 'index', false)
  try {
    const page = await createIndexClient(ix.transport, {}).listNames({
      ...(args.prefix === undefined ? {} : { prefix: args.prefix }),
      ...(args.cursor === undefined ? {} : { cursor: args.cursor }),
      ...(args.limit === undefined ? {} : { limit: args.limit }),
    })
    const width = Math.max(4, ...page.names.map((n) => n.name.length))
    const lines = page.names.map((n) => `${n.name.padEnd(width)}  ${n.manifestAddress ?? '(deleted)'}  seq ${n.seq}`)
    if (page.cursor !== null) lines.push(`(more: --cursor ${page.cursor})`)
    output(out, args.json, page, lines.length > 0 ? lines.join('\n') : '(no names)')
  } finally {
    await ix.close()
  }
}

/** `name get <name>`: what a name is bound to, its providers and its gateway URL. */
export async function nameGetCommand(args: ObjectArgs & { name: string }, out: NodeJS.WritableStream): Promise<void> {
  const name = parseName(args.name, 'name')
  const { createIndexClient } = await import('@ron/index')
  const ix = await connectTo(args, 'index', false)
  try {
    const r = await createIndexClient(ix.transport, {}).resolve(name)
    const o = r as unknown as { manifestAddress: Address; kind?: string; manifest?: { content?: string; size?: number; type?: string }; record?: { seq?: number; node?: string }; providers?: { endpoint?: string; node?: string }[] }
    let urls: { url: string; pathUrl: string } | undefined
    try {
      urls = siteUrls(await discoverService(resolveNodeUrl(args), 'interop'), name, o.manifestAddress)
    } catch {
      urls = undefined
    }
    const lines = [
      `name       ${name}`,
      `manifest   ${o.manifestAddress}  (${o.kind === 'dir' ? 'a directory' : 'a file'})`,
      ...(o.manifest?.content === undefined ? [] : [`content    ${o.manifest.content}  (${o.manifest.size ?? '?'} bytes, ${o.manifest.type ?? '?'})`]),
      ...(o.record === undefined ? [] : [`record     seq ${o.record.seq ?? '?'}, home ${o.record.node ?? '?'}`]),
      ...(o.providers ?? []).map((p) => `provider   ${p.endpoint ?? '?'}  (${p.node ?? '?'})`),
      ...(urls === undefined ? [] : [`open       ${urls.url}`]),
    ]
    output(out, args.json, { ...r, ...(urls ?? {}) }, lines.join('\n'))
  } finally {
    await ix.close()
  }
}

/**
 * `name rm <name> [--expect-previous <b3>]` (scope `index:write`): removes a binding, only if it is
 * the expected one when given; at the name's home (a 409 naming another home is retried there).
 */
export async function nameRmCommand(args: ObjectArgs & { name: string; expectPrevious?: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const name = parseName(args.name, 'name')
  const ifMatch = args.expectPrevious === undefined ? undefined : parseAddress(args.expectPrevious, 'expect-previous')
  const { createIndexClient } = await import('@ron/index')
  let ix = await connectTo(args, 'index', true)
  const asked = ix.url
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await createIndexClient(ix.transport, { token: ix.token! }).deleteName(name, ifMatch === undefined ? {} : { ifMatch })
        if (attempt > 0) await refreshName(asked, name, ix.token!)
        output(out, args.json, r, `removed ${name} (was ${r.previous ?? 'nothing'})`)
        return
      } catch (e) {
        const d = isRonError(e, 'Conflict') ? (e.details as { reason?: unknown; home?: unknown }) : undefined
        if (d?.reason !== 'home_elsewhere' || typeof d.home !== 'string' || attempt > 0) throw e
        await ix.close()
        ix = await connectTo({ ...args, node: d.home }, 'index', true)
      }
    }
  } finally {
    await ix.close()
  }
}
