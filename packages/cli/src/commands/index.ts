/**
 * Every `ron-node` command, in the order `--help` lists them.
 *
 * @module
 */

import type { CliCommand } from './command.js'
import { config } from './config.js'
import { doctor } from './doctor.js'
import { get } from './get.js'
import { join } from './join.js'
import { keys } from './keys.js'
import { ls } from './ls.js'
import { name } from './name.js'
import { peers } from './peers.js'
import { pin } from './pin.js'
import { publish } from './publish.js'
import { put } from './put.js'
import { receipt } from './receipt.js'
import { registry } from './registry.js'
import { resolve } from './resolve.js'
import { start } from './start.js'
import { stat } from './stat.js'
import { status } from './status.js'
import { token } from './token.js'
import { unpin } from './unpin.js'
import { webhook } from './webhook.js'

/** The commands, in help order. */
export const COMMANDS: readonly CliCommand[] = [start, put, get, join, config, publish, stat, ls, pin, unpin, name, resolve, token, keys, registry, webhook, receipt, peers, status, doctor]
