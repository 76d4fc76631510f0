import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, Mount, MountPropagation, SecurityProfile_ProfileType } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostDevices, missingCapabilities, rejectedCapability } from '../src/core/host_privileges.js';
import { mountOf, parseMountInfo, propagationProblem } from '../src/core/mount_propagation.js';
import { loadSeccompProfile } from '../src/core/security.js';

describe('capabilities the host cannot grant', () => {
  it('are the known capabilities missing from the bounding set', () => {
    // This project's machines: every capability up to CHECKPOINT_RESTORE (40) but SYS_RESOURCE (24).
    expect(missingCapabilities('000001fffeffffff', 40)).toEqual(['SYS_RESOURCE']);
    expect(missingCapabilities('000001ffffffffff', 40)).toEqual([]);
    expect(missingCapabilities('0000003fffffffff', 40)).toEqual(['PERFMON', 'BPF', 'CHECKPOINT_RESTORE']);
    // An older kernel knows fewer capabilities: those it does not know are not missing.
    expect(missingCapabilities('0000003fffffffff', 37)).toEqual([]);
  });
});

describe('capabilities the Engine rejects by name', () => {
  it('are read from Docker 20.10 and Docker 23+ errors, and from nothing else', () => {
    expect(rejectedCapability('(HTTP code 400) unexpected - unknown capability: "CAP_BPF"')).toBe('BPF');
    expect(
      rejectedCapability(
        'invalid CapDrop: capability not supported by your kernel or not available in the current environment: "CAP_SYS_RESOURCE"',
      ),
    ).toBe('SYS_RESOURCE');
    expect(rejectedCapability('No such image: pause:3.9')).toBeUndefined();
  });
});

describe('host devices', () => {
  it('lists device nodes but not the container-private pts, shm and mqueue, nor the console', async () => {
    const devices = await hostDevices();
    expect(devices).toContain('/dev/null');
    expect(devices).not.toContain('/dev/console');
    expect(devices.filter((d) => /^\/dev\/(pts|shm|mqueue)\//.test(d))).toEqual([]);
  });
});

const MOUNTINFO = [
  '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
  '42 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw',
  '50 27 0:40 / /mnt/with\\040space rw shared:7 master:3 - tmpfs tmpfs rw',
  '51 27 0:41 / /srv/slave rw master:4 - tmpfs tmpfs rw',
  '52 51 0:42 / /srv/slave rw - tmpfs tmpfs rw',
].join('\n');

describe('mount propagation of the host side', () => {
  const mounts = parseMountInfo(MOUNTINFO);
  const bind = (hostPath: string, propagation: MountPropagation) =>
    Mount.fromPartial({ hostPath, containerPath: '/c', propagation });

  it('parses mount points (unescaped) and their peer groups', () => {
    expect(mounts).toContainEqual({ mountPoint: '/', shared: false, slave: false });
    expect(mounts).toContainEqual({ mountPoint: '/mnt/with space', shared: true, slave: true });
  });

  it('finds the deepest mount holding a path; the last of those stacked on one point', () => {
    expect(mountOf(mounts, '/var/lib/docker/volumes/x')?.mountPoint).toBe('/var/lib/docker');
    expect(mountOf(mounts, '/var/lib/dockerx')?.mountPoint).toBe('/');
    expect(mountOf(mounts, '/srv/slave/a')).toEqual({
      mountPoint: '/srv/slave',
      shared: false,
      slave: false,
    });
  });

  it('needs a shared host mount for rshared and a shared or slave one for rslave', () => {
    const [root, docker] = [mounts[0], mounts[1]];
    if (!root || !docker) throw new Error('mountinfo not parsed');
    const slave = { mountPoint: '/s', shared: false, slave: true };
    expect(propagationProblem(bind('/x', MountPropagation.PROPAGATION_BIDIRECTIONAL), root)).toMatch(
      /"\/x" -> "\/c" asks for bidirectional \(rshared\) propagation, but the host mount "\/" holding it is not shared/,
    );
    expect(propagationProblem(bind('/x', MountPropagation.PROPAGATION_BIDIRECTIONAL), slave)).toBeDefined();
    expect(
      propagationProblem(bind('/x', MountPropagation.PROPAGATION_BIDIRECTIONAL), docker),
    ).toBeUndefined();
    expect(propagationProblem(bind('/x', MountPropagation.PROPAGATION_HOST_TO_CONTAINER), root)).toMatch(
      /neither shared nor slave/,
    );
    expect(
      propagationProblem(bind('/x', MountPropagation.PROPAGATION_HOST_TO_CONTAINER), slave),
    ).toBeUndefined();
    expect(propagationProblem(bind('/x', MountPropagation.PROPAGATION_PRIVATE), root)).toBeUndefined();
  });
});

describe('localhost seccomp profiles', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-seccomp-'));
    await writeFile(join(dir, 'ok.json'), '{"defaultAction":"SCMP_ACT_ALLOW"}');
    await writeFile(join(dir, 'bad.json'), '{"defaultAction":');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const localhost = (localhostRef: string) => ({
    profileType: SecurityProfile_ProfileType.Localhost,
    localhostRef,
  });

  it('are read from an absolute path, with or without the localhost/ prefix', async () => {
    const json = '{"defaultAction":"SCMP_ACT_ALLOW"}';
    await expect(loadSeccompProfile(localhost(join(dir, 'ok.json')), false)).resolves.toBe(json);
    await expect(loadSeccompProfile(localhost(`localhost/${join(dir, 'ok.json')}`), false)).resolves.toBe(
      json,
    );
  });

  it('are not read for other profiles, nor for a privileged container that ignores them', async () => {
    await expect(loadSeccompProfile(localhost('/nonexistent.json'), true)).resolves.toBeUndefined();
    const runtimeDefault = { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
    await expect(loadSeccompProfile(runtimeDefault, false)).resolves.toBeUndefined();
  });

  it('are INVALID_ARGUMENT when relative, missing or not JSON', async () => {
    await expect(loadSeccompProfile(localhost('profiles/ok.json'), false)).rejects.toThrow(
      /not an absolute path/,
    );
    await expect(loadSeccompProfile(localhost(join(dir, 'none.json')), false)).rejects.toThrow(
      /cannot be read: ENOENT/,
    );
    await expect(loadSeccompProfile(localhost(join(dir, 'bad.json')), false)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });
});
