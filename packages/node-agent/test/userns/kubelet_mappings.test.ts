import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getKubeletMappings, parseGetSubIdsOutput } from '../../src/userns/kubelet_mappings.js';
import { USER_NS_UNIT_LENGTH, UsernsManager } from '../../src/userns/userns_manager.js';

let dir: string;
let bin: string;
let passwdFile: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-subids-'));
  bin = join(dir, 'bin');
  await mkdir(bin);
  passwdFile = join(dir, 'passwd');
  await writeFile(passwdFile, 'root:x:0:0:root:/root:/bin/bash\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const withKubeletUser = () =>
  writeFile(
    passwdFile,
    'root:x:0:0:root:/root:/bin/bash\nkubelet:x:999:999::/nonexistent:/usr/sbin/nologin\n',
  );

/** A getsubids that prints `uids` for `getsubids kubelet` and `gids` for `getsubids -g kubelet`. */
async function fakeGetsubids(uids: string, gids = uids, exitCode = 0): Promise<void> {
  const file = join(bin, 'getsubids');
  const script = [
    '#!/bin/sh',
    `if [ "$1" = "-g" ]; then printf '%s' '${gids}'; else printf '%s' '${uids}'; fi`,
    `exit ${exitCode}`,
  ].join('\n');
  await writeFile(file, script);
  await chmod(file, 0o755);
}

const mappings = (idsPerPod = USER_NS_UNIT_LENGTH) =>
  getKubeletMappings({ idsPerPod, passwdFile, path: bin });

describe('getKubeletMappings', () => {
  it('takes the default pool (every whole range above the first) without a kubelet user', async () => {
    await fakeGetsubids('0: kubelet 65536 7208960\n');
    expect(await mappings()).toEqual({ firstId: 65536, length: 2 ** 32 - 65536 });
    expect(await mappings(2 * USER_NS_UNIT_LENGTH)).toEqual({ firstId: 131072, length: 2 ** 32 - 131072 });
  });

  it('takes the default pool when the kubelet user exists but getsubids is not installed', async () => {
    await withKubeletUser();
    expect(await mappings()).toEqual({ firstId: 65536, length: 2 ** 32 - 65536 });
  });

  it("takes the kubelet user's one subordinate range, the same for UIDs and GIDs", async () => {
    await withKubeletUser();
    await fakeGetsubids('0: kubelet 65536 7208960\n');
    expect(await mappings()).toEqual({ firstId: 65536, length: 7208960 });
  });

  it('fails the start when the ranges differ or getsubids fails, with the kubelet messages', async () => {
    await withKubeletUser();
    await fakeGetsubids('0: kubelet 65536 7208960\n', '0: kubelet 131072 7208960\n');
    await expect(mappings()).rejects.toThrow('mismatched subuids and subgids for user "kubelet"');
    await fakeGetsubids('', '', 1);
    await expect(mappings()).rejects.toThrow('error retrieving additional ids for user "kubelet"');
  });

  it('hands pods ranges only from the configured one (upstream: in the configured hostUID/hostGID range)', async () => {
    await withKubeletUser();
    // As upstream configures its nodes: just enough for the kubelet's default 110 pods.
    await fakeGetsubids(`0: kubelet ${65536 * 3} ${65536 * 110}\n`);
    const pool = await mappings();
    const podsDir = join(dir, 'pods');
    const handlers = [{ name: '', supportsRecursiveReadOnlyMounts: true, supportsUserNamespaces: true }];
    const m = await UsernsManager.create({ podsDir, maxPods: 110, pool, runtimeHandlers: () => handlers });
    for (let i = 0; i < 110; i++) {
      const pod: V1Pod = { metadata: { uid: `pod-${i}` }, spec: { containers: [], hostUsers: false } };
      const [u] = (await m.getOrCreateUserNamespaceMappings(pod, '')).uids;
      expect(u!.hostId).toBeGreaterThanOrEqual(65536 * 3);
      expect(u!.hostId + u!.length).toBeLessThanOrEqual(65536 * 113);
    }
    // A range too small for maxPods fails the start, as in the kubelet.
    await expect(
      UsernsManager.create({ podsDir, maxPods: 111, pool, runtimeHandlers: () => handlers }),
    ).rejects.toThrow('kubelet user assigned IDs are not enough to support 111 pods');
  });
});

describe('parseGetSubIdsOutput', () => {
  it('reads the one line getsubids prints', () => {
    expect(parseGetSubIdsOutput('0: kubelet 65536 2147483648\n')).toEqual({
      firstId: 65536,
      length: 2147483648,
    });
  });

  it("refuses anything but one well-formed line, with the kubelet's messages", () => {
    const two = '0: kubelet 65536 65536\n1: kubelet 131072 65536\n';
    expect(() => parseGetSubIdsOutput(two)).toThrow(
      `error parsing line ${JSON.stringify(two)}: it must contain only one line`,
    );
    expect(() => parseGetSubIdsOutput('0: kubelet 65536\n')).toThrow('invalid line "0: kubelet 65536\\n"');
    expect(() => parseGetSubIdsOutput('0: kubelet 65536 4294967296\n')).toThrow(
      /^error parsing line "0: kubelet 65536 4294967296\\n": /,
    );
    expect(() => parseGetSubIdsOutput('0: kubelet -1 65536\n')).toThrow(/^error parsing line /);
  });
});
