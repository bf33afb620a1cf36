/**
 * Injected disk faults for the tests that cannot mount a real tmpfs (not root, not Linux): a
 * wrapper of `node:fs/promises` whose writes under one directory fail with a chosen errno. A test
 * file installs it with
 *
 * ```ts
 * vi.mock('node:fs/promises', async (orig) => (await import('./fs-faults.js')).injectableFs(await orig()))
 * ```
 *
 * and it passes everything through while no fault is set, so the same test runs on a real volume
 * when one can be mounted.
 */

import type * as fsp from 'node:fs/promises'

/** What is failing, under which directory; `counts` counts file-handle writes and syncs under it. */
export const fsFault: {
  under: string | undefined
  code: 'ENOSPC' | 'EROFS' | 'EIO' | undefined
  partial: boolean
  counts: Record<string, number>
  /** While set, every fdatasync under `under` waits for it (a slow disk, to order events). */
  gate: Promise<void> | undefined
  /** fdatasync calls waiting at the gate. */
  held: number
} = {
  under: undefined,
  code: undefined,
  partial: false,
  counts: {},
  gate: undefined,
  held: 0,
}

const under = (path: unknown): boolean => fsFault.under !== undefined && String(path).startsWith(fsFault.under)
const failing = (path: unknown): boolean => fsFault.code !== undefined && under(path)
const errno = (op: string, path: unknown): NodeJS.ErrnoException =>
  Object.assign(new Error(`${fsFault.code ?? 'EIO'}: injected, ${op} '${String(path)}'`), { code: fsFault.code, syscall: op, path: String(path) })

const HANDLE_WRITES = new Set(['write', 'writeFile', 'appendFile', 'sync', 'datasync', 'truncate', 'writev'])

/** `node:fs/promises` with injectable write faults (see the module comment). */
export function injectableFs(real: typeof fsp): typeof fsp {
  const wrapHandle = (fh: fsp.FileHandle, path: unknown): fsp.FileHandle =>
    new Proxy(fh, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown
        if (typeof v !== 'function') return v
        const fn = v as (...a: unknown[]) => Promise<unknown>
        if (typeof prop !== 'string' || !HANDLE_WRITES.has(prop)) return fn.bind(target)
        return async (...args: unknown[]) => {
          if (under(path)) fsFault.counts[prop] = (fsFault.counts[prop] ?? 0) + 1
          if (prop === 'datasync' && under(path) && fsFault.gate !== undefined) {
            fsFault.held++
            try {
              await fsFault.gate
            } finally {
              fsFault.held--
            }
          }
          if (!failing(path)) return fn.apply(target, args)
          if (prop === 'truncate' && fsFault.code === 'ENOSPC') return fn.apply(target, args)
          // A full volume may take part of a write before it refuses the rest.
          if (prop === 'write' && fsFault.partial && Buffer.isBuffer(args[0])) {
            fsFault.partial = false
            const buf = args[0]
            const off = typeof args[1] === 'number' ? args[1] : 0
            const len = typeof args[2] === 'number' ? args[2] : buf.length - off
            return fn.apply(target, [buf, off, Math.max(1, Math.floor(len / 2))])
          }
          throw errno(prop, path)
        }
      },
    })
  const writeMode = (flags: unknown): boolean => typeof flags === 'string' && /[wa+]/.test(flags)
  return {
    ...real,
    async open(path: Parameters<typeof real.open>[0], flags?: Parameters<typeof real.open>[1], mode?: Parameters<typeof real.open>[2]) {
      if (failing(path) && fsFault.code === 'EROFS' && writeMode(flags)) throw errno('open', path)
      return wrapHandle(await real.open(path, flags, mode), path)
    },
    async writeFile(...args: Parameters<typeof real.writeFile>) {
      if (failing(args[0])) throw errno('write', args[0])
      return real.writeFile(...args)
    },
    async appendFile(...args: Parameters<typeof real.appendFile>) {
      if (failing(args[0])) throw errno('write', args[0])
      return real.appendFile(...args)
    },
    async rename(...args: Parameters<typeof real.rename>) {
      if (failing(args[1]) && fsFault.code !== 'ENOSPC') throw errno('rename', args[1])
      return real.rename(...args)
    },
    async rm(...args: Parameters<typeof real.rm>) {
      if (failing(args[0]) && fsFault.code === 'EROFS') throw errno('rm', args[0])
      return real.rm(...args)
    },
  }
}
