import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NamespaceMode } from '@kh/cri-api';
import type { RuntimeHandler } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MAPPINGS_FILE,
  USER_NS_UNIT_LENGTH,
  UsernsManager,
  type UsernsManagerOptions,
} from '../../src/userns/userns_manager.js';

const supporting: RuntimeHandler[] = [
  { name: '', supportsRecursiveReadOnlyMounts: true, supportsUserNamespaces: true },
  { name: 'legacy', supportsRecursiveReadOnlyMounts: false, supportsUserNamespaces: false },
];

const pod = (uid: string, hostUsers?: boolean): V1Pod => ({
  metadata: { name: uid, namespace: 'ns', uid },
  spec: { containers: [], ...(hostUsers !== undefined ? { hostUsers } : {}) },
});

let podsDir: string;
beforeEach(async () => {
  podsDir = await mkdtemp(join(tmpdir(), 'kh-userns-'));
});
afterEach(async () => {
  await rm(podsDir, { recursive: true, force: true });
});

const manager = (o: Partial<UsernsManagerOptions> = {}) =>
  UsernsManager.create({ podsDir, maxPods: 110, runtimeHandlers: () => supporting, ...o });
/** A pool of two ranges: 2·65536 and 3·65536. */
const twoSlots = { pool: { firstId: 2 * USER_NS_UNIT_LENGTH, length: 2 * USER_NS_UNIT_LENGTH }, maxPods: 2 };

describe('UsernsManager', () => {
  it('keeps pods that do not set hostUsers: false in the host user namespace (mode NODE)', async () => {
    const m = await manager({ runtimeHandlers: () => undefined });
    for (const p of [pod('a'), pod('b', true)]) {
      expect(await m.getOrCreateUserNamespaceMappings(p, '')).toEqual({
        mode: NamespaceMode.NODE,
        uids: [],
        gids: [],
      });
    }
    expect(m.allocatedTo('a')).toBeUndefined();
  });

  it('gives each hostUsers: false pod its own 65536-long range from 65536 up, the same on every call', async () => {
    const m = await manager();
    const a = await m.getOrCreateUserNamespaceMappings(pod('a', false), '');
    const b = await m.getOrCreateUserNamespaceMappings(pod('b', false), '');
    for (const ns of [a, b]) {
      expect(ns.mode).toBe(NamespaceMode.POD);
      expect(ns.uids).toEqual(ns.gids);
      const [mapping] = ns.uids;
      expect(mapping?.containerId).toBe(0);
      expect(mapping?.length).toBe(65536);
      expect(mapping!.hostId % 65536).toBe(0);
      expect(mapping!.hostId).toBeGreaterThanOrEqual(65536);
      expect(mapping!.hostId + mapping!.length).toBeLessThanOrEqual(2 ** 32);
    }
    expect(a.uids[0]?.hostId).not.toBe(b.uids[0]?.hostId);
    expect(await m.getOrCreateUserNamespaceMappings(pod('a', false), '')).toEqual(a);
    expect(JSON.parse(await readFile(join(podsDir, 'a', MAPPINGS_FILE), 'utf8'))).toEqual({
      uidMappings: a.uids,
      gidMappings: a.gids,
    });
  });

  it('hands a restarted agent the same mapping, and never gives a range on disk to another pod', async () => {
    const first = await manager(twoSlots);
    const a = await first.getOrCreateUserNamespaceMappings(pod('a', false), '');
    const restarted = await manager(twoSlots);
    expect(restarted.allocatedTo('a')).toBe(a.uids[0]?.hostId);
    const b = await restarted.getOrCreateUserNamespaceMappings(pod('b', false), '');
    expect(b.uids[0]?.hostId).not.toBe(a.uids[0]?.hostId);
    expect(await restarted.getOrCreateUserNamespaceMappings(pod('a', false), '')).toEqual(a);
  });

  it('allocates one at a time: concurrent calls never share a range or give one pod two', async () => {
    const m = await manager(twoSlots);
    const [a1, b, a2] = await Promise.all([
      m.getOrCreateUserNamespaceMappings(pod('a', false), ''),
      m.getOrCreateUserNamespaceMappings(pod('b', false), ''),
      m.getOrCreateUserNamespaceMappings(pod('a', false), ''),
    ]);
    expect(a2).toEqual(a1);
    expect(b.uids[0]?.hostId).not.toBe(a1.uids[0]?.hostId);
  });

  it('fails cleanly when the pool is exhausted, and allocates again once a pod is gone', async () => {
    const m = await manager(twoSlots);
    await m.getOrCreateUserNamespaceMappings(pod('a', false), '');
    const b = await m.getOrCreateUserNamespaceMappings(pod('b', false), '');
    await expect(m.getOrCreateUserNamespaceMappings(pod('c', false), '')).rejects.toThrow(
      'create user namespace: could not find an empty slot to allocate a user namespace',
    );
    await expect(stat(join(podsDir, 'c', MAPPINGS_FILE))).rejects.toMatchObject({ code: 'ENOENT' });
    // Housekeeping: "a" is neither wanted nor running any more.
    await m.cleanupOrphanedPodUsernsAllocations(new Set(['b', 'c']));
    expect(m.allocatedTo('a')).toBeUndefined();
    await expect(stat(join(podsDir, 'a', MAPPINGS_FILE))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(m.allocatedTo('b')).toBe(b.uids[0]?.hostId);
    const c = await m.getOrCreateUserNamespaceMappings(pod('c', false), '');
    expect(c.uids[0]?.hostId).not.toBe(b.uids[0]?.hostId);
  });

  it('frees a range on release, also for a pod known only from its file', async () => {
    const m = await manager(twoSlots);
    await m.getOrCreateUserNamespaceMappings(pod('a', false), '');
    await m.release('a');
    expect(m.allocatedTo('a')).toBeUndefined();
    await expect(stat(join(podsDir, 'a', MAPPINGS_FILE))).rejects.toMatchObject({ code: 'ENOENT' });
    await m.getOrCreateUserNamespaceMappings(pod('b', false), '');
    await m.getOrCreateUserNamespaceMappings(pod('c', false), '');
  });

  it("refuses a pod whose runtime handler does not announce user namespaces, with the kubelet's messages", async () => {
    const m = await manager();
    await expect(m.getOrCreateUserNamespaceMappings(pod('a', false), 'legacy')).rejects.toThrow(
      /^can't set `spec.hostUsers: false`, RuntimeClass handler "legacy" does not support user namespaces$/,
    );
    await expect(m.getOrCreateUserNamespaceMappings(pod('a', false), 'gvisor')).rejects.toThrow(
      'can\'t set `spec.hostUsers: false`, RuntimeClass handler "gvisor" does not support user namespaces: the handler "gvisor" is not known',
    );
    const noSupport = await manager({
      runtimeHandlers: () => [
        { name: '', supportsRecursiveReadOnlyMounts: true, supportsUserNamespaces: false },
      ],
    });
    await expect(noSupport.getOrCreateUserNamespaceMappings(pod('a', false), '')).rejects.toThrow(
      /^can't set `spec.hostUsers: false`, runtime does not support user namespaces$/,
    );
    const unknown = await manager({ runtimeHandlers: () => undefined });
    await expect(unknown.getOrCreateUserNamespaceMappings(pod('a', false), '')).rejects.toThrow(
      "can't set `spec.hostUsers: false`, runtime does not support user namespaces: runtime handlers are not set",
    );
    expect(m.allocatedTo('a')).toBeUndefined();
  });

  it("checks the pool against idsPerPod and maxPods with the kubelet's messages", async () => {
    await expect(manager({ ...twoSlots, maxPods: 3 })).rejects.toThrow(
      'kubelet user assigned IDs are not enough to support 3 pods',
    );
    await expect(manager({ idsPerPod: 1000 })).rejects.toThrow(
      'kubelet user namespace length 1000 is not a multiple of 65536',
    );
    await expect(manager({ pool: { firstId: 0, length: 2 ** 20 }, maxPods: 1 })).rejects.toThrow(
      'kubelet user assigned ID 0 must be greater or equal to 65536',
    );
    const big = await manager({ idsPerPod: 2 * USER_NS_UNIT_LENGTH });
    const ns = await big.getOrCreateUserNamespaceMappings(pod('a', false), '');
    expect(ns.uids[0]?.length).toBe(2 * USER_NS_UNIT_LENGTH);
  });

  it('refuses to start over a mapping file it did not write, rather than share its range', async () => {
    const m = await manager();
    await m.getOrCreateUserNamespaceMappings(pod('a', false), '');
    await writeFile(
      join(podsDir, 'a', MAPPINGS_FILE),
      JSON.stringify({
        uidMappings: [{ hostId: 65536, containerId: 1, length: 65536 }],
        gidMappings: [{ hostId: 65536, containerId: 1, length: 65536 }],
      }),
    );
    await expect(manager()).rejects.toThrow(
      'record pod mappings for existing pod "a": invalid user namespace configuration: UID 0 must be mapped',
    );
  });
});
