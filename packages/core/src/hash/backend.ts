/**
 * Which BLAKE3 backend is in use, decided when this module loads (it loads the native binding if
 * no hash has yet). Kept apart from `blake3.ts` so that `@ron/core/client`, which does not import
 * it, loads the binding only when it first hashes.
 *
 * @module
 */

import { loadBlake3Backend, type Blake3Backend } from './blake3.js'

/**
 * The backend that loaded: `'native'` (`@napi-rs/blake-hash`) or `'noble'` (`@noble/hashes`,
 * pure JS, roughly 100× slower). Set `RON_BLAKE3_BACKEND=noble` to force the fallback.
 */
export const blake3Backend: Blake3Backend = loadBlake3Backend()
