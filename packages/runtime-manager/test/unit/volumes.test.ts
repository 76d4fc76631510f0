import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SyncStepError } from '../../src/container/sync_result.js';
import { validatePayloadPath, writePayload } from '../../src/kuberuntime/atomic_writer.js';
import { DefaultRuntimeHelper } from '../../src/kuberuntime/runtime_helper.js';
import type { TmpfsMounter } from '../../src/kuberuntime/subpath.js';
import { PodVolumes } from '../../src/kuberuntime/volumes.js';
import { FakeObjects } from '../fake_objects.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-vol-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = (data: string, mode = 0o644) => ({ data: Buffer.from(data), mode });

describe('writePayload', () => {
  it('writes through a ..data symlink to a timestamped dir and swaps it on change', async () => {
    expect(
      await writePayload(
        dir,
        new Map([
          ['a', file('1')],
          ['sub/b', file('2', 0o400)],
        ]),
      ),
    ).toBe(true);
    const first = await readlink(join(dir, '..data'));
    expect(first).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d{9}$/);
    expect(await readlink(join(dir, 'a'))).toBe('..data/a');
    expect(await readlink(join(dir, 'sub'))).toBe('..data/sub');
    expect(await readFile(join(dir, 'sub/b'), 'utf8')).toBe('2');
    expect((await stat(join(dir, 'sub/b'))).mode & 0o777).toBe(0o400);

    // Same payload: nothing is rewritten.
    expect(
      await writePayload(
        dir,
        new Map([
          ['a', file('1')],
          ['sub/b', file('2', 0o400)],
        ]),
      ),
    ).toBe(false);
    expect(await readlink(join(dir, '..data'))).toBe(first);

    // A changed payload: new dir, old dir and the dropped name are gone.
    expect(await writePayload(dir, new Map([['a', file('3')]]))).toBe(true);
    expect(await readlink(join(dir, '..data'))).not.toBe(first);
    expect(await readFile(join(dir, 'a'), 'utf8')).toBe('3');
    expect((await readdir(dir)).sort()).toEqual(['..data', await readlink(join(dir, '..data')), 'a'].sort());
  });

  it('refuses paths that leave the volume', () => {
    for (const p of ['/etc/passwd', '../x', 'a/../../x', '..data'])
      expect(() => validatePayloadPath(p)).toThrow();
    expect(() => validatePayloadPath('a/b.c')).not.toThrow();
  });
});

const pod = (volumes: V1Volume[]): V1Pod => ({
  metadata: {
    name: 'web',
    namespace: 'ns',
    uid: 'u1',
    labels: { b: '2', a: '1' },
    annotations: { note: 'hi "x"' },
  },
  spec: {
    serviceAccountName: 'sa',
    containers: [{ name: 'app', resources: { limits: { memory: '64Mi' } } }],
    volumes,
  },
});

async function files(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(root)) {
    if (e.startsWith('..')) continue;
    const p = join(root, e);
    if ((await stat(p)).isDirectory()) {
      for (const [k, v] of Object.entries(await files(p))) out[`${e}/${k}`] = v;
    } else out[e] = await readFile(p, 'utf8');
  }
  return out;
}

describe('PodVolumes', () => {
  const objects = () =>
    new FakeObjects()
      .configMap('cm', { a: 'A', b: 'B' }, { bin: Buffer.from([0, 1]).toString('base64') })
      .secret('s', { user: 'admin', pass: 'pw' });

  it('projects config maps (all keys, binaryData included) read-only under kubernetes.io~configmap', async () => {
    const v = new PodVolumes(dir, objects());
    const src = await v.setUp(pod([]), { name: 'cfg', configMap: { name: 'cm' } });
    expect(src).toEqual({ hostPath: join(dir, 'u1/volumes/kubernetes.io~configmap/cfg'), readonly: true });
    expect(await files(src!.hostPath)).toEqual({ a: 'A', b: 'B', bin: '\u0000\u0001' });
  });

  it("gives the pod's fsGroup every file of an API volume, with group read bits and setgid dirs", async () => {
    const v = new PodVolumes(dir, objects());
    const p = pod([]);
    p.spec!.securityContext = { fsGroup: 200 };
    const vol: V1Volume = {
      name: 'cfg',
      configMap: {
        name: 'cm',
        items: [
          { key: 'a', path: 'sub/a', mode: 0o400 },
          { key: 'b', path: 'b' },
        ],
      },
    };
    const src = await v.setUp(p, vol);
    const data = join(src!.hostPath, await readlink(join(src!.hostPath, '..data')));
    for (const f of [join(data, 'sub/a'), join(data, 'b'), join(src!.hostPath, 'b')]) {
      expect((await stat(f)).gid).toBe(200);
    }
    expect((await lstat(join(src!.hostPath, 'b'))).gid).toBe(200);
    expect((await stat(join(data, 'sub/a'))).mode & 0o777).toBe(0o440);
    expect((await stat(join(data, 'b'))).mode & 0o777).toBe(0o644);
    expect((await stat(join(data, 'sub'))).mode & 0o2000).toBe(0o2000);
    // The group bits it added are no change: a refresh with the same objects writes nothing.
    expect(await v.refresh({ ...p, spec: { ...p.spec!, volumes: [vol] } })).toEqual({
      updated: [],
      errors: [],
    });
    expect(await readlink(join(src!.hostPath, '..data'))).toBe(data.slice(src!.hostPath.length + 1));
  });

  it('re-owns an API volume on every write whatever fsGroupChangePolicy says, as the kubelet does', async () => {
    // The kubelet's API volume plugins pass no policy: OnRootMismatch with a matching root skips nothing.
    const objs = objects();
    const v = new PodVolumes(dir, objs);
    const p = pod([]);
    p.spec!.securityContext = { fsGroup: 200, fsGroupChangePolicy: 'OnRootMismatch' };
    const vol: V1Volume = { name: 'cfg', configMap: { name: 'cm' } };
    const { hostPath } = (await v.setUp(p, vol))!;
    expect((await stat(hostPath)).gid).toBe(200);
    objs.configMap('cm', { a: 'changed' });
    expect((await v.refresh({ ...p, spec: { ...p.spec!, volumes: [vol] } })).updated).toEqual(['cfg']);
    const st = await stat(join(hostPath, 'a'));
    expect(st.gid).toBe(200);
    expect(st.mode & 0o777).toBe(0o644);
  });

  it('projects selected items with their paths and modes, and the defaultMode', async () => {
    const v = new PodVolumes(dir, objects());
    const vol: V1Volume = {
      name: 'sec',
      secret: {
        secretName: 's',
        defaultMode: 0o400,
        items: [
          { key: 'user', path: 'creds/user' },
          { key: 'pass', path: 'p', mode: 0o600 },
        ],
      },
    };
    const src = await v.setUp(pod([]), vol);
    expect(src!.hostPath).toBe(join(dir, 'u1/volumes/kubernetes.io~secret/sec'));
    expect(await files(src!.hostPath)).toEqual({ 'creds/user': 'admin', p: 'pw' });
    expect((await stat(join(src!.hostPath, 'creds/user'))).mode & 0o777).toBe(0o400);
    expect((await stat(join(src!.hostPath, 'p'))).mode & 0o777).toBe(0o600);
  });

  it('fails setup with the kubelet messages, waiting as ContainerCreating; optional volumes stay empty', async () => {
    const v = new PodVolumes(dir, objects());
    const fail = async (vol: V1Volume) => {
      const err = await v.setUp(pod([]), vol).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SyncStepError);
      expect((err as SyncStepError).reason).toBe('ContainerCreating');
      return (err as Error).message;
    };
    expect(await fail({ name: 'cfg', configMap: { name: 'gone' } })).toBe(
      'MountVolume.SetUp failed for volume "cfg" : configmap "gone" not found',
    );
    expect(await fail({ name: 'sec', secret: { secretName: 'gone' } })).toBe(
      'MountVolume.SetUp failed for volume "sec" : secret "gone" not found',
    );
    expect(await fail({ name: 'cfg', configMap: { name: 'cm', items: [{ key: 'zz', path: 'z' }] } })).toBe(
      'MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: zz',
    );
    const opt = await v.setUp(pod([]), { name: 'o', configMap: { name: 'gone', optional: true } });
    expect(await files(opt!.hostPath)).toEqual({});
  });

  it('projects downward API fields and resources', async () => {
    const v = new PodVolumes(dir, objects());
    const src = await v.setUp(pod([]), {
      name: 'info',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
          {
            path: 'mem',
            resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' },
          },
        ],
      },
    });
    expect(src!.hostPath).toBe(join(dir, 'u1/volumes/kubernetes.io~downward-api/info'));
    expect(await files(src!.hostPath)).toEqual({
      labels: 'a="1"\nb="2"',
      annotations: 'note="hi \\"x\\""',
      name: 'web',
      mem: '64',
    });
  });

  it('projects config maps, secrets, fields and a bound service account token together', async () => {
    const o = objects();
    const v = new PodVolumes(dir, o);
    const src = await v.setUp(pod([]), {
      name: 'all',
      projected: {
        sources: [
          { configMap: { name: 'cm', items: [{ key: 'a', path: 'cm-a' }] } },
          { secret: { name: 's', items: [{ key: 'user', path: 'user' }] } },
          { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          { serviceAccountToken: { path: 'token', audience: 'vault', expirationSeconds: 7200 } },
          { serviceAccountToken: { path: 'default-token' } },
        ],
      },
    });
    expect(src!.hostPath).toBe(join(dir, 'u1/volumes/kubernetes.io~projected/all'));
    expect(await files(src!.hostPath)).toEqual({
      'cm-a': 'A',
      user: 'admin',
      ns: 'ns',
      token: 'token-1',
      'default-token': 'token-1',
    });
    expect(o.tokenRequests).toEqual([
      { pod: 'web', audience: 'vault', expirationSeconds: 7200 },
      { pod: 'web', expirationSeconds: 3600 },
    ]);
  });

  it('refresh rewrites set-up volumes when objects change and keeps files when they cannot be read', async () => {
    const o = objects();
    const v = new PodVolumes(dir, o);
    const p = pod([
      { name: 'cfg', configMap: { name: 'cm' } },
      { name: 'never-mounted', secret: { secretName: 's' } },
      { name: 'scratch', emptyDir: {} },
    ]);
    const src = await v.setUp(p, p.spec!.volumes![0]!);
    expect(await v.refresh(p)).toEqual({ updated: [], errors: [] });
    o.configMap('cm', { a: 'A2' });
    expect(await v.refresh(p)).toEqual({ updated: ['cfg'], errors: [] });
    expect(await files(src!.hostPath)).toEqual({ a: 'A2' });
    expect(await lstat(join(dir, 'u1/volumes/kubernetes.io~secret')).catch(() => undefined)).toBeUndefined();
    o.configMaps.delete('cm');
    const r = await v.refresh(p);
    expect(r.errors.map((e) => e.message)).toEqual([
      'MountVolume.SetUp failed for volume "cfg" : configmap "cm" not found',
    ]);
    expect(await files(src!.hostPath)).toEqual({ a: 'A2' });
  });
  it('serializes writes to one volume: a start and a refresh at once both succeed', async () => {
    const o = objects();
    const v = new PodVolumes(dir, o);
    const p = pod([{ name: 'cfg', configMap: { name: 'cm' } }]);
    await v.setUp(p, p.spec!.volumes![0]!);
    o.configMap('cm', { a: 'next' });
    const results = await Promise.all([
      v.setUp(p, p.spec!.volumes![0]!),
      v.refresh(p),
      v.refresh(p),
      v.setUp(p, p.spec!.volumes![0]!),
    ]);
    expect(results[1]).toEqual({ updated: [], errors: [] });
    expect(await files(join(dir, 'u1/volumes/kubernetes.io~configmap/cfg'))).toEqual({ a: 'next' });
    expect(
      (await readdir(join(dir, 'u1/volumes/kubernetes.io~configmap/cfg'))).filter((e) => e.startsWith('..2')),
    ).toHaveLength(1);
  });
});

/** Records tmpfs mounts instead of making them (they need root and would outlive a failed test). */
class RecordingTmpfs implements TmpfsMounter {
  readonly mounted = new Map<string, number | undefined>();
  readonly unmounted: string[] = [];
  async mountTmpfs(target: string, sizeBytes: number | undefined) {
    this.mounted.set(target, sizeBytes);
  }
  async unmount(target: string) {
    this.unmounted.push(target);
    this.mounted.delete(target);
  }
  async isMountPoint(target: string) {
    return this.mounted.has(target);
  }
}

const Mi = 2 ** 20;

describe('emptyDir volumes', () => {
  const emptyDir = (name: string, medium?: string, sizeLimit?: string): V1Volume => ({
    name,
    emptyDir: { ...(medium ? { medium } : {}), ...(sizeLimit ? { sizeLimit } : {}) },
  });
  const withNode = (memory: string) => {
    const o = new FakeObjects();
    o.node = { metadata: { name: 'n' }, status: { allocatable: { memory } } };
    return o;
  };

  // The kubelet's calculateEmptyDirMemorySize cases: node allocatable, lowered to the pod's limit,
  // lowered to the volume's sizeLimit; a bound that is larger (or zero) does not raise it.
  it.each([
    ['sizeLimit under the pod limit', '100Mi', '64Mi', 64 * Mi, '1Gi'],
    ['sizeLimit over the pod limit', '100Mi', '128Mi', 100 * Mi, '1Gi'],
    ['no sizeLimit: the pod limit', undefined, '64Mi', 64 * Mi, '1Gi'],
    ['no pod limit: the sizeLimit', '100Mi', undefined, 100 * Mi, '1Gi'],
    ['nothing smaller: node allocatable', undefined, undefined, 1024 * Mi, '1Gi'],
    ['a pod limit over allocatable: allocatable', undefined, '2Gi', 1024 * Mi, '1Gi'],
    ['a zero sizeLimit is no bound', '0', undefined, 1024 * Mi, '1Gi'],
  ])(
    'medium Memory is a tmpfs sized as the kubelet sizes it: %s',
    async (_, sizeLimit, podLimit, want, alloc) => {
      const tmpfs = new RecordingTmpfs();
      const v = new PodVolumes(dir, withNode(alloc), tmpfs);
      const p = pod([emptyDir('mem', 'Memory', sizeLimit)]);
      p.spec!.containers[0]!.resources = podLimit ? { limits: { memory: podLimit } } : {};
      const src = await v.setUp(p, p.spec!.volumes![0]!);
      expect(src).toEqual({ hostPath: join(dir, 'u1/volumes/kubernetes.io~empty-dir/mem'), readonly: false });
      expect([...tmpfs.mounted]).toEqual([[src!.hostPath, want]]);
      // Set up again (a second container): mounted once.
      await v.setUp(p, p.spec!.volumes![0]!);
      expect(tmpfs.mounted.size).toBe(1);
    },
  );

  it('a disk-backed emptyDir is a plain directory; a failed tmpfs mount is ContainerCreating', async () => {
    const tmpfs = new RecordingTmpfs();
    const v = new PodVolumes(dir, undefined, tmpfs);
    await v.setUp(pod([]), emptyDir('disk', undefined, '100Mi'));
    expect(tmpfs.mounted.size).toBe(0);
    expect((await stat(join(dir, 'u1/volumes/kubernetes.io~empty-dir/disk'))).isDirectory()).toBe(true);
    const refusing: TmpfsMounter = {
      isMountPoint: async () => false,
      unmount: async () => {},
      mountTmpfs: async () => {
        throw new Error('mount: permission denied');
      },
    };
    const failing = new PodVolumes(dir, undefined, refusing);
    await expect(failing.setUp(pod([]), emptyDir('mem', 'Memory'))).rejects.toMatchObject({
      reason: 'ContainerCreating',
      message: expect.stringContaining('volume "mem"'),
    });
  });

  it("gives a new emptyDir to the pod's fsGroup (rwx for the group, setgid), once: later writes keep theirs", async () => {
    const tmpfs = new RecordingTmpfs();
    const v = new PodVolumes(dir, undefined, tmpfs);
    const p = pod([]);
    p.spec!.securityContext = { fsGroup: 200 };
    for (const vol of [emptyDir('disk'), emptyDir('mem', 'Memory')]) {
      const { hostPath } = (await v.setUp(p, vol))!;
      const st = await stat(hostPath);
      expect(st.gid).toBe(200);
      expect(st.mode & 0o7777).toBe(0o2777);
      // A file written later inherits the group (setgid) and keeps its mode: a second
      // container's set-up changes nothing.
      await writeFile(join(hostPath, 'private'), 'x', { mode: 0o600 });
      await v.setUp(p, vol);
      const f = await stat(join(hostPath, 'private'));
      expect(f.gid).toBe(200);
      expect(f.mode & 0o777).toBe(0o600);
    }
  });

  it('a new emptyDir is world-writable whatever the umask, and without fsGroup keeps its group', async () => {
    const old = process.umask(0o077);
    try {
      const { hostPath } = (await new PodVolumes(dir).setUp(pod([]), emptyDir('disk')))!;
      const st = await stat(hostPath);
      expect(st.mode & 0o7777).toBe(0o777);
      expect(st.gid).toBe(0);
    } finally {
      process.umask(old);
    }
  });

  it("tearDownEmptyDirs unmounts the tmpfs ones and deletes every emptyDir's data", async () => {
    const tmpfs = new RecordingTmpfs();
    const v = new PodVolumes(dir, undefined, tmpfs);
    const disk = (await v.setUp(pod([]), emptyDir('disk')))!.hostPath;
    const mem = (await v.setUp(pod([]), emptyDir('mem', 'Memory', '1Mi')))!.hostPath;
    await writeFile(join(disk, 'data'), 'x');
    const cfg = (await new PodVolumes(dir, new FakeObjects().configMap('cm', { k: 'v' })).setUp(pod([]), {
      name: 'cfg',
      configMap: { name: 'cm' },
    }))!.hostPath;
    expect(await v.tearDownEmptyDirs('u1')).toEqual([]);
    expect(tmpfs.unmounted).toEqual([mem]);
    expect(await readdir(join(dir, 'u1/volumes/kubernetes.io~empty-dir'))).toEqual([]);
    // Other volume types are not emptyDir's to delete.
    expect((await stat(cfg)).isDirectory()).toBe(true);
    expect(await v.tearDownEmptyDirs('no-such-pod')).toEqual([]);
  });
});

describe('DefaultRuntimeHelper mounts', () => {
  it('mounts API volumes read-only and sets them up before building envs', async () => {
    const h = new DefaultRuntimeHelper(dir, '', new FakeObjects().configMap('cm', { k: 'v' }));
    const p = pod([{ name: 'cfg', configMap: { name: 'cm' } }]);
    const c = { name: 'app', volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg', readOnly: false }] };
    const opts = await h.generateRunContainerOptions(p, c, []);
    expect(opts.mounts).toEqual([
      {
        containerPath: '/etc/cfg',
        hostPath: join(dir, 'u1/volumes/kubernetes.io~configmap/cfg'),
        readonly: true,
      },
    ]);
    const missing = pod([{ name: 'cfg', configMap: { name: 'gone' } }]);
    const c2 = { ...c, env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'other', key: 'k' } } }] };
    await expect(h.generateRunContainerOptions(missing, c2, [])).rejects.toMatchObject({
      reason: 'ContainerCreating',
    });
  });
});
