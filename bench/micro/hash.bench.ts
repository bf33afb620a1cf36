/**
 * BLAKE3 throughput: our `blake3()` / `createBlake3()` against the native backend called directly
 * (the hardware-ish limit) and the pure-JS @noble/hashes fallback, on 64 KiB and 64 MiB inputs.
 */
import { createRequire } from 'node:module'
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js'
import { blake3, blake3Backend, createBlake3 } from '../../packages/core/src/hash/index.js'
import { compare, report, type Measured } from '../lib/harness.js'

interface Native {
  blake3(b: Uint8Array): Buffer
  Blake3Hasher: new () => { update(b: Uint8Array): unknown; digestBuffer(): Buffer }
}
const native = createRequire(import.meta.url)('@napi-rs/blake-hash') as Native

const toMBps = (rows: Measured[], bytes: number): Measured[] => rows.map((r) => ({ name: r.name, opsPerSec: (r.opsPerSec * bytes) / 1e6, ...(r.samples === undefined ? {} : { samples: r.samples.map((x) => (x * bytes) / 1e6) }) }))

export async function run(): Promise<void> {
  console.log(`backend loaded: ${blake3Backend}`)
  const small = new Uint8Array(64 * 1024).map((_, i) => i % 251)
  const rowsSmall = await compare(
    { name: 'native blake3() direct (64 KiB)', fn: () => native.blake3(small) },
    [
      { name: 'ron blake3() (64 KiB)', fn: () => blake3(small) },
      { name: 'ron createBlake3 one chunk (64 KiB)', fn: () => createBlake3().update(small).digest() },
      { name: '@noble/hashes blake3 (64 KiB)', fn: () => nobleBlake3(small) },
    ],
    { ops: 2000, rounds: 9 },
  )
  report('BLAKE3 64 KiB', toMBps(rowsSmall, small.length), 'MB/s')

  const big = new Uint8Array(64 * 1024 * 1024).map((_, i) => i % 251)
  const chunk = 64 * 1024
  const rowsBig = await compare(
    { name: 'native blake3() direct (64 MiB)', fn: () => native.blake3(Buffer.from(big.buffer)) },
    [
      { name: 'ron blake3() (64 MiB)', fn: () => blake3(big) },
      {
        name: 'ron createBlake3, 64 KiB chunks (64 MiB)',
        fn: () => {
          const h = createBlake3()
          for (let off = 0; off < big.length; off += chunk) h.update(big.subarray(off, off + chunk))
          return h.digest()
        },
      },
      {
        name: 'native Blake3Hasher, 64 KiB chunks (64 MiB)',
        fn: () => {
          const h = new native.Blake3Hasher()
          for (let off = 0; off < big.length; off += chunk) h.update(Buffer.from(big.buffer, off, chunk))
          return h.digestBuffer()
        },
      },
    ],
    { ops: 10, rounds: 5 },
  )
  const nobleBig = await compare({ name: '@noble/hashes blake3 (64 MiB)', fn: () => nobleBlake3(big) }, [], { ops: 1, rounds: 3 })
  report('BLAKE3 64 MiB', toMBps([...rowsBig, ...nobleBig], big.length), 'MB/s')
}
