/**
 * A name's own origin on the gateway (SPEC §6a "Gateway"): `http://<label>.<gateway domain>:<port>/`
 * where `<label>` inlines the name as Kubo's subdomain gateway inlines DNSLink names — every `-`
 * doubled, then every `.` turned into `-` — so the whole name fits one DNS label. A name whose label
 * would pass 63 characters has no origin of its own (path gateway only).
 *
 * @module
 */

import { isValidName } from './contracts.js'

/** Longest DNS label. */
export const MAX_LABEL_LENGTH = 63

/**
 * The gateway label of `name`, or `undefined` when the name is not valid or its label would pass
 * 63 characters.
 *
 * @example
 * ```ts
 * gatewayLabel('docs.alice')    // 'docs-alice'
 * gatewayLabel('my-site.alice') // 'my--site-alice'
 * ```
 */
export function gatewayLabel(name: string): string | undefined {
  if (!isValidName(name)) return undefined
  const label = name.replaceAll('-', '--').replaceAll('.', '-')
  return label.length > MAX_LABEL_LENGTH ? undefined : label
}

/**
 * The name a gateway label stands for (the inverse of {@link gatewayLabel}), or `undefined` when
 * `label` is not the label of a valid name (not lower case, a lone `-` where no dot can be, or not
 * the label {@link gatewayLabel} would make).
 *
 * @example
 * ```ts
 * nameFromGatewayLabel('my--site-alice') // 'my-site.alice'
 * nameFromGatewayLabel('Docs-alice')     // undefined
 * ```
 */
export function nameFromGatewayLabel(label: string): string | undefined {
  if (label.length === 0 || label.length > MAX_LABEL_LENGTH) return undefined
  let name = ''
  for (let i = 0; i < label.length; i++) {
    const c = label[i]
    if (c !== '-') name += c
    else if (label[i + 1] === '-') {
      name += '-'
      i++
    } else name += '.'
  }
  return gatewayLabel(name) === label ? name : undefined
}
