/**
 * Object commands beyond put/get: `stat`, `ls`, `pin`, `unpin`, and the name commands `name set`
 * and `resolve`.
 *
 * @module
 */

import { parseAddress, throwIfError } from '@ron/core'
import { connectTo, output, type ClientOptions } from '../client.js'
import { CliError, ExitCode } from '../exit-codes.js'

/** Options shared by these commands. */
export interface ObjectArgs extends ClientOptions {
  json?: boolean | undefined
}

/** `stat <address>`: size, pins, integrity and repair state of an object on the node's storage. */
export async function statCommand(args: ObjectArgs & { address: string }, out: NodeJS.WritableStream): Promise<void> {
  const address = parseAddress(args.address, 'address')
  const { createStorageClient } = await import('@ron/storage')
  const conn = await connectTo(args, 'storage', false)
  try {
    const client = createStorageClient(conn.transport, { target: 'storage', ...(conn.token === undefined ? {} : { token: conn.token }) })
    const st = await client.status(address)
    const lines = Object.entries(st as unknown as Record<string, unknown>).map(([k, v]) => `${k.padEnd(10)} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    output(out, args.json, st, lines.join('\n'))
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
  if (args.manifest !== true) {
    const st = await connectTo(args, 'storage', true)
    try {
      const storage = createStorageClient(st.transport, { target: 'storage', token: st.token! })
      const head = await storage.head(address)
      if (head === undefined) throw new CliError(`${address} is not stored on this node: put it first (ron-node put <file>)`, ExitCode.NotFound)
      manifest = { content: address, size: head.size, type: args.type ?? 'application/octet-stream' }
      manifestAddress = (await storage.put(JSON.stringify(manifest))).address
    } finally {
      await st.close()
    }
  }
  const ix = await connectTo(args, 'index', true)
  try {
    const index = createIndexClient(ix.transport, { token: ix.token! })
    const expected = args.expectPrevious === undefined ? {} : { expectedPrevious: args.expectPrevious === 'none' ? null : args.expectPrevious }
    const result = await index.setName(args.name, manifestAddress, expected)
    output(out, args.json, { name: args.name, manifestAddress, ...(manifest === undefined ? {} : { manifest }), result }, `${args.name} → ${manifestAddress}`)
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
    const o = r as unknown as { manifestAddress?: string; manifest?: { content?: string; size?: number; type?: string }; providers?: { endpoint?: string; node?: string }[] }
    const lines = [
      ...(o.manifestAddress === undefined ? [] : [`manifest   ${o.manifestAddress}`]),
      ...(o.manifest?.content === undefined ? [] : [`content    ${o.manifest.content}  (${o.manifest.size ?? '?'} bytes, ${o.manifest.type ?? '?'})`]),
      ...(o.providers ?? []).map((p) => `provider   ${p.endpoint ?? '?'}  (${p.node ?? '?'})`),
    ]
    output(out, args.json, r, lines.length > 0 ? lines.join('\n') : JSON.stringify(r))
  } finally {
    await ix.close()
  }
}
