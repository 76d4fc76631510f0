// The host IDs the node gives its pods' user namespaces, found as the kubelet finds them
// (getKubeletMappings): the subordinate UIDs and GIDs of a "kubelet" user, through shadow-utils'
// `getsubids`, when the node has both; otherwise the default pool.

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { defaultPool } from './userns_manager.js';

/** The user whose subordinate IDs hold the node's pool. */
export const KUBELET_USER = 'kubelet';
/** shadow-utils' tool that prints a user's subordinate ID ranges. */
export const GETSUBIDS = 'getsubids';

export interface KubeletMappingsOptions {
  idsPerPod: number;
  /** The user database the kubelet user is looked up in; default /etc/passwd. */
  passwdFile?: string;
  /** Where `getsubids` is searched for; default $PATH. */
  path?: string;
}

/**
 * The node's pool for user namespaces: the kubelet user's single subordinate range when the user
 * exists and `getsubids` is installed (the same range for UIDs and GIDs, or the start fails),
 * otherwise every whole range above the first. The pool's bounds are checked by the manager.
 */
export async function getKubeletMappings(
  opts: KubeletMappingsOptions,
): Promise<{ firstId: number; length: number }> {
  if (!(await userExists(opts.passwdFile ?? '/etc/passwd', KUBELET_USER))) return defaultPool(opts.idsPerPod);
  const cmd = await lookPath(GETSUBIDS, opts.path ?? process.env.PATH ?? '');
  if (cmd === undefined) return defaultPool(opts.idsPerPod);
  const run = promisify(execFile);
  const uids = await run(cmd, [KUBELET_USER]).catch(() => {
    throw new Error(`error retrieving additional ids for user "${KUBELET_USER}"`);
  });
  const gids = await run(cmd, ['-g', KUBELET_USER]).catch(() => {
    throw new Error(`error retrieving additional gids for user "${KUBELET_USER}"`);
  });
  if (uids.stdout !== gids.stdout)
    throw new Error(`mismatched subuids and subgids for user "${KUBELET_USER}"`);
  return parseGetSubIdsOutput(uids.stdout);
}

/**
 * One `getsubids` line, `0: kubelet 65536 7208960` (index, user, first ID, count): the only
 * range the kubelet accepts. Its messages are the kubelet's.
 */
export function parseGetSubIdsOutput(input: string): { firstId: number; length: number } {
  const lines = input.replace(/^\n+|\n+$/g, '').split('\n');
  const line = lines[0] ?? '';
  if (lines.length !== 1)
    throw new Error(`error parsing line ${JSON.stringify(input)}: it must contain only one line`);
  const parts = line.trim().split(/\s+/);
  if (parts.length !== 4) throw new Error(`invalid line ${JSON.stringify(input)}`);
  const [firstId, length] = [parts[2], parts[3]].map((p) => parseUint32(p ?? '', input)) as [number, number];
  return { firstId, length };
}

function parseUint32(text: string, input: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n > 0xffffffff)
    throw new Error(`error parsing line ${JSON.stringify(input)}: invalid uint32 ${JSON.stringify(text)}`);
  return n;
}

/** Whether the user database has an entry named `name` (Go's user.Lookup on /etc/passwd). */
async function userExists(passwdFile: string, name: string): Promise<boolean> {
  const text = await readFile(passwdFile, 'utf8');
  return text.split('\n').some((line) => line.split(':')[0] === name && line.split(':').length >= 7);
}

/** The first executable `name` on `path`, as exec.LookPath finds it. */
async function lookPath(name: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(delimiter)) {
    const file = join(dir === '' ? '.' : dir, name);
    if (
      await access(file, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return file;
  }
  return undefined;
}
