/**
 * The SPEC §6a contracts index uses, from `@ron/core` (one schema each, shared with storage and
 * the clients), gathered in one place for the package.
 *
 * @module
 */

export { manifestSchema, nameWriteSchema, parseName, providerAnnouncementSchema, isValidName, parseManifest, isDirManifest, MAX_MANIFEST_BYTES } from '@ron/core'
export type { Manifest, AnyManifest, DirManifest, NameWrite, ProviderAnnouncement } from '@ron/core'
