import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { goArch, memoryCgroupDir, readMachineInfo } from '../src/nodestatus/machine_info.js';

function fakeHost(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'kh-host-'));
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

const MEMINFO = 'MemTotal:       16384000 kB\nMemFree:         1000 kB\n';

describe('readMachineInfo', () => {
  it('reads identity files, os-release and meminfo', async () => {
    const root = fakeHost({
      '/proc/meminfo': MEMINFO,
      '/etc/machine-id': 'abc123\n',
      '/sys/class/dmi/id/product_uuid': 'EC2A-UUID\n',
      '/proc/sys/kernel/random/boot_id': 'boot-1\n',
      '/etc/os-release': 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
    });
    const m = await readMachineInfo({
      rootDir: root,
      hostRoot: root,
      numCores: 4,
      kernelVersion: '6.1.0',
      architecture: 'amd64',
    });
    expect(m).toMatchObject({
      numCores: 4,
      memoryCapacityBytes: 16_384_000n * 1024n,
      machineID: 'abc123',
      systemUUID: 'ec2a-uuid',
      bootID: 'boot-1',
      kernelVersion: '6.1.0',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      operatingSystem: 'linux',
      architecture: 'amd64',
    });
    expect(m.rootfsCapacityBytes).toBeGreaterThan(0n);
  });

  it('lowers memory to a cgroup v1 limit of the agent (a node in a container)', async () => {
    const root = fakeHost({
      '/proc/meminfo': MEMINFO,
      '/proc/self/cgroup': '12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n',
      '/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes': '2147483648\n',
    });
    expect((await readMachineInfo({ rootDir: root, hostRoot: root })).memoryCapacityBytes).toBe(2n << 30n);
  });

  it('ignores the unlimited cgroup values of v1 and v2', async () => {
    const v1 = fakeHost({
      '/proc/meminfo': MEMINFO,
      '/proc/self/cgroup': '9:memory:/\n',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
    });
    expect((await readMachineInfo({ rootDir: v1, hostRoot: v1 })).memoryCapacityBytes).toBe(
      16_384_000n * 1024n,
    );
    const v2 = fakeHost({
      '/proc/meminfo': MEMINFO,
      '/proc/self/cgroup': '0::/kh\n',
      '/sys/fs/cgroup/kh/memory.max': 'max\n',
    });
    expect((await readMachineInfo({ rootDir: v2, hostRoot: v2 })).memoryCapacityBytes).toBe(
      16_384_000n * 1024n,
    );
    const v2limited = fakeHost({
      '/proc/meminfo': MEMINFO,
      '/proc/self/cgroup': '0::/kh\n',
      '/sys/fs/cgroup/kh/memory.max': '1073741824\n',
    });
    expect((await readMachineInfo({ rootDir: v2limited, hostRoot: v2limited })).memoryCapacityBytes).toBe(
      1n << 30n,
    );
  });

  it('leaves unreadable identity fields empty', async () => {
    const root = fakeHost({ '/proc/meminfo': MEMINFO });
    const m = await readMachineInfo({ rootDir: root, hostRoot: root });
    expect(m.systemUUID).toBe('');
    expect(m.machineID).toBe('');
    expect(m.osImage).toBe('Linux');
  });

  it('reads this machine', async () => {
    const m = await readMachineInfo({ rootDir: tmpdir() });
    expect(m.numCores).toBeGreaterThan(0);
    expect(m.memoryCapacityBytes).toBeGreaterThan(0n);
    expect(m.bootID).toMatch(/^[0-9a-f-]{36}$/);
    expect(m.architecture).toBe(goArch());
  });

  it('maps Node architectures to GOARCH', () => {
    expect(goArch('x64')).toBe('amd64');
    expect(goArch('arm64')).toBe('arm64');
  });
});

describe('memoryCgroupDir', () => {
  const reader = (files: Record<string, string>) => async (p: string) => files[p]?.trim();

  it("finds the process's own memory cgroup, v1 and v2", async () => {
    const v1 = reader({
      '/proc/self/cgroup': '12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n',
      '/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes': '2147483648',
    });
    expect(await memoryCgroupDir(v1)).toEqual({ dir: '/sys/fs/cgroup/memory/docker/abc', version: 1 });
    const v2 = reader({ '/proc/self/cgroup': '0::/kh\n', '/sys/fs/cgroup/kh/memory.max': 'max' });
    expect(await memoryCgroupDir(v2)).toEqual({ dir: '/sys/fs/cgroup/kh', version: 2 });
  });

  it('falls back to the root of the hierarchy in a private cgroup namespace, and gives up without one', async () => {
    const privateNs = reader({
      '/proc/self/cgroup': '9:memory:/docker/abc\n',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': '1073741824',
    });
    expect(await memoryCgroupDir(privateNs)).toEqual({ dir: '/sys/fs/cgroup/memory', version: 1 });
    expect(await memoryCgroupDir(reader({ '/proc/self/cgroup': '9:memory:/x\n' }))).toBeUndefined();
  });
});
