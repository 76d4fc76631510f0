import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultRuntimeHelper } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OrphanedPodDirs } from '../../src/volumemanager/orphaned_pod_dirs.js';

/** Bind mounts as a set of targets; `stuck` targets refuse to unmount (busy). */
class FakeMounter {
  readonly mounted = new Set<string>();
  readonly stuck = new Set<string>();
  async bind(_source: string, target: string) {
    this.mounted.add(target);
  }
  async mountTmpfs(target: string) {
    this.mounted.add(target);
  }
  async unmount(target: string) {
    if (this.stuck.has(target)) throw new Error(`umount: ${target}: target is busy.`);
    this.mounted.delete(target);
  }
  async isMountPoint(target: string) {
    return this.mounted.has(target);
  }
}

let dir: string;
let podsDir: string;
let hostDir: string;
let mounter: FakeMounter;
let helper: DefaultRuntimeHelper;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-orphan-dirs-'));
  podsDir = join(dir, 'pods');
  hostDir = join(dir, 'host');
  await mkdir(hostDir, { recursive: true });
  mounter = new FakeMounter();
  helper = new DefaultRuntimeHelper(podsDir, '', undefined, mounter, mounter);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A pod whose container mounts an emptyDir and a hostPath volume by sub-path, as the e2e subpath pods do. */
const pod = (uid: string): V1Pod => ({
  metadata: { name: uid, namespace: 'default', uid },
  spec: {
    containers: [
      {
        name: 'test-container-subpath',
        image: 'busybox',
        volumeMounts: [
          { name: 'test-volume', mountPath: '/test-volume', subPath: 'sub' },
          { name: 'host', mountPath: '/host', subPath: 'data' },
        ],
      },
    ],
    volumes: [
      { name: 'test-volume', emptyDir: {} },
      { name: 'host', hostPath: { path: hostDir } },
    ],
  },
});

/** Starts the pod's container as far as the agent goes: its volumes and prepared sub-paths. */
async function start(uid: string): Promise<string[]> {
  const { mounts } = await helper.generateRunContainerOptions(pod(uid), pod(uid).spec!.containers[0]!, []);
  return mounts.map((m) => m.hostPath);
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );
const cleaner = (extraMounts: string[] = []) =>
  new OrphanedPodDirs({
    podsDir,
    helper,
    mountPoints: async () => [...mounter.mounted, ...extraMounts],
  });

describe('OrphanedPodDirs (the kubelet cleanupOrphanedPodDirs)', () => {
  it('unmounts the sub-paths of a pod deleted while the agent was down and removes its directory', async () => {
    const goneTargets = await start('gone');
    const keptTargets = await start('kept');
    await writeFile(join(hostDir, 'data', 'f'), 'host data');
    expect(goneTargets.every((t) => mounter.mounted.has(t))).toBe(true);

    const removed = await cleaner().cleanupOrphaned((uid) => uid === 'kept');

    expect(removed).toEqual(['gone']);
    expect(goneTargets.some((t) => mounter.mounted.has(t))).toBe(false);
    expect(await exists(join(podsDir, 'gone'))).toBe(false);
    // The pod still wanted keeps its mounts and directory; the host path keeps its data.
    expect(keptTargets.every((t) => mounter.mounted.has(t))).toBe(true);
    expect(await exists(join(podsDir, 'kept', 'volume-subpaths'))).toBe(true);
    expect(await readFile(join(hostDir, 'data', 'f'), 'utf8')).toBe('host data');
  });

  it('keeps a directory whose sub-path will not unmount, and removes it once it does', async () => {
    const [emptyDirTarget] = await start('gone');
    mounter.stuck.add(emptyDirTarget!);
    const volume = join(podsDir, 'gone', 'volumes', 'kubernetes.io~empty-dir', 'test-volume');
    await writeFile(join(volume, 'sub', 'f'), 'pod data');

    expect(await cleaner().cleanupOrphaned(() => false)).toEqual([]);
    expect(mounter.mounted.has(emptyDirTarget!)).toBe(true);
    expect(await exists(emptyDirTarget!)).toBe(true);
    // The volume under the stuck sub-path keeps its data.
    expect(await readFile(join(volume, 'sub', 'f'), 'utf8')).toBe('pod data');

    mounter.stuck.clear();
    expect(await cleaner().cleanupOrphaned(() => false)).toEqual(['gone']);
    expect(await exists(join(podsDir, 'gone'))).toBe(false);
  });

  it('never removes through a mount it did not make', async () => {
    await start('gone');
    const foreign = join(podsDir, 'gone', 'volumes', 'kubernetes.io~nfs', 'data');
    await mkdir(foreign, { recursive: true });
    await writeFile(join(foreign, 'f'), 'remote data');

    expect(await cleaner([foreign]).cleanupOrphaned(() => false)).toEqual([]);
    expect(await readFile(join(foreign, 'f'), 'utf8')).toBe('remote data');
  });

  it('does nothing without a pods directory', async () => {
    expect(await cleaner().cleanupOrphaned(() => false)).toEqual([]);
  });
});
