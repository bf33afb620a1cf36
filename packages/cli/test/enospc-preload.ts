/**
 * An injected full disk for a real `ron-node` where the test cannot mount a tmpfs (not root, not
 * Linux). Preloaded into the node (`node --import tsx --import <this file>`), it makes every
 * `node:fs` write under the directories in `RON_TEST_ENOSPC_UNDER` (joined by the path delimiter)
 * fail with ENOSPC while the file `RON_TEST_ENOSPC_FLAG` exists: a test fills the "disk" by
 * creating that file and frees it by removing it. Reads, opens and everything outside those
 * directories pass through. Native writers (LMDB) are out of its reach.
 *
 * `node:fs/promises` (`writeFile`, `appendFile`, `copyFile`, `rename`, `link`, and the writes and
 * syncs of a `FileHandle` it opened) and the synchronous writers (also on a FileHandle's `fd`) are
 * patched on the CommonJS module objects; `syncBuiltinESMExports()` then carries them to every
 * ESM import of the node.
 */

import fs from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { delimiter, resolve } from 'node:path'

type Fn = (this: unknown, ...args: unknown[]) => unknown

const under = (process.env['RON_TEST_ENOSPC_UNDER'] ?? '')
  .split(delimiter)
  .filter((d) => d !== '')
  .map((d) => resolve(d))
const flag = process.env['RON_TEST_ENOSPC_FLAG']
const existsSync = fs.existsSync

/** True when a write to `path` must fail now. */
function full(path: unknown): boolean {
  if (flag === undefined || (typeof path !== 'string' && !(path instanceof URL) && !Buffer.isBuffer(path))) return false
  const p = resolve(path instanceof URL ? path.pathname : String(path))
  return under.some((d) => p === d || p.startsWith(`${d}/`)) && existsSync(flag)
}

function enospc(syscall: string, path: unknown): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOSPC: no space left on device (injected), ${syscall} '${String(path)}'`), { code: 'ENOSPC', errno: -28, syscall, path: String(path) })
}

/** Replaces `obj[name]` by `wrap(original)`. */
function patch(obj: object, name: string, wrap: (real: Fn) => Fn): void {
  const real = (obj as Record<string, unknown>)[name]
  if (typeof real === 'function') (obj as Record<string, unknown>)[name] = wrap(real as Fn)
}

/** The path each FileHandle opened through `open` was opened with. */
const handlePaths = new WeakMap<object, unknown>()
/** The path each descriptor was opened with (`openSync`, and a FileHandle's `fd` for `writeSync(fh.fd, …)`). */
const fdPaths = new Map<number, unknown>()

const fsp = fs.promises
patch(fsp, 'open', (real) =>
  async function (this: unknown, ...args: unknown[]) {
    const fh = (await real.apply(this, args)) as FileHandle
    handlePaths.set(fh, args[0])
    fdPaths.set(fh.fd, args[0])
    return fh
  },
)
for (const name of ['writeFile', 'appendFile']) {
  patch(fsp, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      // A FileHandle given for the path: the path it was opened with.
      const p = typeof args[0] === 'object' && args[0] !== null && handlePaths.has(args[0]) ? handlePaths.get(args[0]) : args[0]
      return full(p) ? Promise.reject(enospc(name, p)) : real.apply(this, args)
    },
  )
}
for (const name of ['copyFile', 'rename', 'link']) {
  patch(fsp, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      return full(args[1]) ? Promise.reject(enospc(name, args[1])) : real.apply(this, args)
    },
  )
}

// Every FileHandle shares one prototype: patch its writers, failing only handles opened under the directories.
const probe = await fsp.open(process.execPath, 'r')
const proto = Object.getPrototypeOf(probe) as object
await probe.close()
patch(proto, 'close', (real) =>
  function (this: unknown, ...args: unknown[]) {
    if (typeof this === 'object' && this !== null && handlePaths.has(this)) fdPaths.delete((this as FileHandle).fd)
    return real.apply(this, args)
  },
)
for (const name of ['write', 'writev', 'writeFile', 'appendFile', 'sync', 'datasync', 'truncate']) {
  patch(proto, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      const p = typeof this === 'object' && this !== null ? handlePaths.get(this) : undefined
      return full(p) ? Promise.reject(enospc(name, p)) : real.apply(this, args)
    },
  )
}

// The synchronous writers, by path and by descriptor.
patch(fs, 'openSync', (real) =>
  function (this: unknown, ...args: unknown[]) {
    const fd = real.apply(this, args) as number
    fdPaths.set(fd, args[0])
    return fd
  },
)
patch(fs, 'closeSync', (real) =>
  function (this: unknown, ...args: unknown[]) {
    fdPaths.delete(args[0] as number)
    return real.apply(this, args)
  },
)
for (const name of ['writeFileSync', 'appendFileSync']) {
  patch(fs, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      const p = typeof args[0] === 'number' ? fdPaths.get(args[0]) : args[0]
      if (full(p)) throw enospc(name, p)
      return real.apply(this, args)
    },
  )
}
for (const name of ['writeSync', 'fsyncSync', 'fdatasyncSync', 'ftruncateSync']) {
  patch(fs, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      const p = fdPaths.get(args[0] as number)
      if (full(p)) throw enospc(name, p)
      return real.apply(this, args)
    },
  )
}
for (const name of ['renameSync', 'copyFileSync']) {
  patch(fs, name, (real) =>
    function (this: unknown, ...args: unknown[]) {
      if (full(args[1])) throw enospc(name, args[1])
      return real.apply(this, args)
    },
  )
}

syncBuiltinESMExports()
