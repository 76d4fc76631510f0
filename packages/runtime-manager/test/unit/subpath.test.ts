import {
  chmod,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrCreateContainerConfig, SyncStepError } from '../../src/container/sync_result.js';
import { DefaultRuntimeHelper } from '../../src/kuberuntime/runtime_helper.js';
import {
  checkSubPath,
  cleanSubPaths,
  expandSubPathExpr,
  hostMounter,
  prepareSubPath,
  SubPathError,
  type SubPathMounter,
} from '../../src/kuberuntime/subpath.js';

/** Records what each bind would mount: the file the descriptor names at bind time. */
class RecordingMounter implements SubPathMounter {
  readonly mounted = new Map<string, string>();
  async bind(source: string, target: string) {
    expect(source).toMatch(new RegExp(`^/proc/${process.pid}/fd/\\d+$`));
    this.mounted.set(target, await readlink(source));
  }
  async unmount(target: string) {
    this.mounted.delete(target);
  }
  async isMountPoint(target: string) {
    return this.mounted.has(target);
  }
}

let dir: string;
let vol: string;
let outside: string;
let pods: string;
let mounter: RecordingMounter;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-subpath-'));
  vol = join(dir, 'vol');
  outside = join(dir, 'outside');
  pods = join(dir, 'pods');
  await mkdir(vol);
  await mkdir(join(outside, 'bin'), { recursive: true });
  await writeFile(join(outside, 'bin', 'sh'), 'host shell');
  mounter = new RecordingMounter();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const prep = (subPath: string, index = 0) =>
  prepareSubPath(mounter, {
    podsDir: pods,
    podUid: 'uid1',
    volumeName: 'test-volume',
    containerName: 'c',
    index,
    volumePath: vol,
    subPath,
  });
const targetOf = (index = 0) => join(pods, 'uid1', 'volume-subpaths', 'test-volume', 'c', String(index));

describe('checkSubPath (the API checks, again on the node)', () => {
  it('refuses absolute paths and .. components, keeps names that only contain dots', () => {
    expect(() => checkSubPath('/etc')).toThrow('error SubPath `/etc` must not be an absolute path');
    expect(() => checkSubPath('a/../../b')).toThrow(
      "unable to provision SubPath `a/../../b`: must not contain '..'",
    );
    expect(() => checkSubPath('..')).toThrow(SubPathError);
    expect(() => checkSubPath('a/b..c/..d')).not.toThrow();
  });
});

describe('expandSubPathExpr', () => {
  it('expands the env, unescapes $$ and refuses unset or empty variables', () => {
    const envs = [
      { name: 'POD_NAME', value: 'web-1' },
      { name: 'EMPTY', value: '' },
    ];
    expect(expandSubPathExpr('logs/$(POD_NAME)/$$x', envs)).toBe('logs/web-1/$x');
    expect(() => expandSubPathExpr('$(NOPE)/$(EMPTY)', envs)).toThrow('missing value for EMPTY, NOPE');
  });
});

describe('prepareSubPath', () => {
  it('creates a missing sub-path inside the volume and binds it at volume-subpaths/<vol>/<container>/<index>', async () => {
    const target = await prep('a/b', 2);
    expect(target).toBe(targetOf(2));
    expect((await stat(join(vol, 'a', 'b'))).isDirectory()).toBe(true);
    expect((await stat(target)).isDirectory()).toBe(true);
    expect(mounter.mounted.get(target)).toBe(join(vol, 'a', 'b'));
  });

  it("creates missing directories with the volume root's mode, setgid and sticky included, whatever the umask", async () => {
    // An fsGroup tmpfs emptyDir's root: tmpfs's 1777 plus fsGroup's setgid.
    await chmod(vol, 0o3777);
    const umask = process.umask(0o022);
    try {
      await prep('a/b');
    } finally {
      process.umask(umask);
    }
    for (const d of [join(vol, 'a'), join(vol, 'a', 'b')]) expect((await stat(d)).mode & 0o7777).toBe(0o3777);
  });

  it('binds an existing file onto a file target', async () => {
    await writeFile(join(vol, 'f'), 'x');
    const target = await prep('f');
    expect((await stat(target)).isFile()).toBe(true);
    expect(mounter.mounted.get(target)).toBe(join(vol, 'f'));
  });

  it('follows a link that stays inside the volume, and binds its target', async () => {
    await mkdir(join(vol, 'real'));
    await symlink('real', join(vol, 'alias'));
    expect(mounter.mounted.get(await prep('alias'))).toBe(join(vol, 'real'));
  });

  // The four traversal cases of upstream's subpath.go, made by a link inside the volume.
  it.each([
    ['a directory outside the volume', () => join(outside, 'bin'), 'failed to prepare subPath'],
    ['a file outside the volume', () => join(outside, 'bin', 'sh'), 'failed to prepare subPath'],
    [
      'a non-existent path outside the volume',
      () => join(outside, 'notanexistingpath'),
      'failed to create subPath',
    ],
    ['backstepping out of the volume', () => '../', 'failed to prepare subPath'],
  ])('refuses a link to %s, mounting nothing', async (_, link, message) => {
    await symlink(link(), join(vol, 'sub'));
    await expect(prep('sub')).rejects.toThrow(
      `${message}` +
        (message.includes('create') ? ' directory' : '') +
        ' for volumeMount "test-volume" of container "c"',
    );
    expect(mounter.mounted.size).toBe(0);
    expect(await readdir(outside)).toEqual(['bin']);
  });

  it('creates nothing outside the volume through a linked parent', async () => {
    await symlink(outside, join(vol, 'up'));
    await expect(prep('up/new/dir')).rejects.toThrow('failed to create subPath directory');
    expect(await readdir(outside)).toEqual(['bin']);
  });

  it('rebinds on a second prepare (a restarted container gets the sub-path as it is now)', async () => {
    await mkdir(join(vol, 'one'));
    const target = await prep('one');
    await prep('one');
    expect([...mounter.mounted.keys()]).toEqual([target]);
  });
});

describe('cleanSubPaths', () => {
  it("unmounts and removes the pod's targets, and leaves the volume alone", async () => {
    await writeFile(join(vol, 'f'), 'keep');
    await prep('f', 0);
    await prep('d', 1);
    expect(await cleanSubPaths(mounter, pods, 'uid1')).toEqual([]);
    expect(mounter.mounted.size).toBe(0);
    expect(await readdir(join(pods, 'uid1'))).toEqual([]);
    expect(await readFile(join(vol, 'f'), 'utf8')).toBe('keep');
  });

  it('leaves a target that stays mounted, and reports it', async () => {
    await prep('d');
    const stuck: SubPathMounter = {
      bind: async () => undefined,
      isMountPoint: async () => true,
      unmount: async () => {
        throw new Error('busy');
      },
    };
    const errors = await cleanSubPaths(stuck, pods, 'uid1');
    expect(errors.map((e) => e.message)).toEqual(['busy']);
    expect((await stat(targetOf())).isDirectory()).toBe(true);
  });
});

describe('real bind mounts (root only)', () => {
  it.runIf(process.getuid?.() === 0)('the target shows the sub-path, and cleaning unmounts it', async () => {
    await mkdir(join(vol, 'data'));
    await writeFile(join(vol, 'data', 'f'), 'inside');
    const target = await prepareSubPath(hostMounter, {
      podsDir: pods,
      podUid: 'uid1',
      volumeName: 'v',
      containerName: 'c',
      index: 0,
      volumePath: vol,
      subPath: 'data',
    });
    try {
      expect(await hostMounter.isMountPoint(target)).toBe(true);
      expect(await readFile(join(target, 'f'), 'utf8')).toBe('inside');
    } finally {
      expect(await cleanSubPaths(hostMounter, pods, 'uid1')).toEqual([]);
    }
    expect(await hostMounter.isMountPoint(target)).toBe(false);
    expect(await readFile(join(vol, 'data', 'f'), 'utf8')).toBe('inside');
  });
});

describe('DefaultRuntimeHelper sub-paths', () => {
  const pod = (mount: Record<string, string>): V1Pod => ({
    metadata: { name: 'web-1', namespace: 'ns', uid: 'uid1' },
    spec: {
      volumes: [{ name: 'test-volume', hostPath: { path: vol } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          volumeMounts: [{ name: 'test-volume', mountPath: '/m', ...mount }],
        },
      ],
    },
  });
  const run = (p: V1Pod) =>
    new DefaultRuntimeHelper(pods, '', undefined, mounter).generateRunContainerOptions(
      p,
      p.spec!.containers[0]!,
      [],
    );

  it('expands subPathExpr with downward-API env and mounts the prepared path', async () => {
    const opts = await run(pod({ subPathExpr: 'logs/$(POD_NAME)' }));
    expect(opts.mounts[0]!.hostPath).toBe(targetOf());
    expect(mounter.mounted.get(targetOf())).toBe(join(vol, 'logs', 'web-1'));
  });

  it('turns a traversal into CreateContainerConfigError naming subPath', async () => {
    await symlink('/', join(vol, 'root'));
    const err = await run(pod({ subPath: 'root' })).catch((e) => e);
    expect(err).toBeInstanceOf(SyncStepError);
    expect(err.reason).toBe(ErrCreateContainerConfig);
    expect(err.message).toBe('failed to prepare subPath for volumeMount "test-volume" of container "c"');
    const abs = await run(pod({ subPath: '/etc' })).catch((e) => e);
    expect(abs.reason).toBe(ErrCreateContainerConfig);
    expect(mounter.mounted.size).toBe(0);
  });

  it('cleanupPod releases the mounts', async () => {
    const helper = new DefaultRuntimeHelper(pods, '', undefined, mounter);
    const p = pod({ subPath: 'x' });
    await helper.generateRunContainerOptions(p, p.spec!.containers[0]!, []);
    expect(mounter.mounted.size).toBe(1);
    expect(await helper.cleanupPod('uid1')).toEqual([]);
    expect(mounter.mounted.size).toBe(0);
  });

  it('cleanupPod leaves an emptyDir alone while a sub-path of it stays mounted', async () => {
    const busy = new Error('umount: target is busy');
    mounter.unmount = async () => {
      throw busy;
    };
    const helper = new DefaultRuntimeHelper(pods, '', undefined, mounter);
    const p = pod({ subPath: 'x' });
    p.spec!.volumes = [{ name: 'test-volume', emptyDir: {} }];
    await helper.generateRunContainerOptions(p, p.spec!.containers[0]!, []);
    const data = join(pods, 'uid1', 'volumes', 'kubernetes.io~empty-dir', 'test-volume', 'x', 'f');
    await writeFile(data, 'pod data');
    expect(await helper.cleanupPod('uid1')).toEqual([busy]);
    expect(await readFile(data, 'utf8')).toBe('pod data');
  });
});
