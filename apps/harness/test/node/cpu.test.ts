import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { afterEach, describe, expect, it } from 'vitest';
import { cgroupCpuClock, containerCpuClock, hostCpu, parseProcStat } from '../../src/node/cpu.js';

let root: string | undefined;
/** A cgroupfs (or /proc) tree of the given files under a fresh directory. */
async function tree(files: Record<string, string>): Promise<string> {
  root = await mkdtemp(join(tmpdir(), 'kh-cpu-'));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

const ID = 'docker/70ae547e';
/** /proc/<pid>/cgroup of a container on a cgroup v1 host with cgroupfs (this CI host's kind). */
const V1 = `9:name=systemd:/${ID}\n4:memory:/${ID}\n2:cpuacct:/${ID}\n1:cpu:/${ID}\n0::/${ID}\n`;

describe('cgroupCpuClock', () => {
  it("reads cgroup v1's cpuacct.usage in nanoseconds, also on a hybrid host", async () => {
    const cg = await tree({
      [`cpuacct/${ID}/cpuacct.usage`]: '1500000000\n',
      [`unified/${ID}/cpu.stat`]: 'usage_usec 99000000\n',
    });
    const clock = await cgroupCpuClock(V1, cg);
    expect(await clock()).toBe(1.5);
    // Read again at each call: the counter moves.
    await writeFile(join(cg, `cpuacct/${ID}/cpuacct.usage`), '4250000000\n');
    expect(await clock()).toBe(4.25);
  });

  it('finds cpuacct mounted together with cpu', async () => {
    const cg = await tree({ [`cpu,cpuacct/${ID}/cpuacct.usage`]: '2000000000' });
    expect(await (await cgroupCpuClock(`3:cpu,cpuacct:/${ID}\n`, cg))()).toBe(2);
  });

  it("reads cgroup v2's cpu.stat usage_usec (a systemd-driver scope)", async () => {
    const scope = 'system.slice/docker-70ae547e.scope';
    const cg = await tree({
      'cgroup.controllers': 'cpu memory',
      [`${scope}/cpu.stat`]: 'usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n',
    });
    expect(await (await cgroupCpuClock(`0::/${scope}\n`, cg))()).toBe(2.5);
  });

  it('uses the unified tree of a hybrid host without cpuacct files', async () => {
    const cg = await tree({ [`unified/${ID}/cpu.stat`]: 'usage_usec 750000\n' });
    expect(await (await cgroupCpuClock(V1, cg))()).toBe(0.75);
  });

  it('refuses the root cgroup (the whole host) and a cgroup without accounting', async () => {
    const cg = await tree({ 'cpuacct/cpuacct.usage': '1', 'cpu.stat': 'usage_usec 1\n' });
    await expect(cgroupCpuClock('2:cpuacct:/\n0::/\n', cg)).rejects.toThrow(/root cgroup/);
    await expect(cgroupCpuClock(V1, cg)).rejects.toThrow(/no CPU accounting/);
    const noUsage = await tree({ [`x/cpu.stat`]: 'user_usec 1\n' });
    await expect((await cgroupCpuClock('0::/x\n', noUsage))()).rejects.toThrow(/usage_usec/);
  });
});

describe('containerCpuClock', () => {
  const docker = (pid: number) =>
    ({ getContainer: () => ({ inspect: async () => ({ State: { Pid: pid } }) }) }) as unknown as Docker;

  it("reads the cgroup of the container's main process", async () => {
    const dir = await tree({
      'proc/4242/cgroup': V1,
      [`cgroup/cpuacct/${ID}/cpuacct.usage`]: '3000000000',
    });
    const clock = await containerCpuClock(docker(4242), 'abc', {
      proc: join(dir, 'proc'),
      cgroup: join(dir, 'cgroup'),
    });
    expect(await clock()).toBe(3);
  });

  it('fails for a container that is not running', async () => {
    await expect(containerCpuClock(docker(0), 'abcdef0123456789')).rejects.toThrow(
      /abcdef012345 is not running/,
    );
  });
});

describe('host CPU from /proc/stat', () => {
  it('counts user, nice, system, irq, softirq and steal as busy; idle and iowait only in the total', () => {
    const stat = 'cpu  100 20 30 1000 50 5 5 10 40 0\ncpu0 50 10 15 500 25 2 3 5 20 0\nintr 1 2\n';
    expect(parseProcStat(stat)).toEqual({ busy: 1.7, total: 12.2 });
  });

  it('rejects a file without the aggregate line', () => {
    expect(() => parseProcStat('cpu0 1 2 3 4\n')).toThrow(/no aggregate cpu line/);
    expect(() => parseProcStat('cpu  1 x 3 4\n')).toThrow(/malformed/);
  });

  it('reads a /proc tree, and gives nothing where there is none', async () => {
    const proc = await tree({ stat: 'cpu  200 0 100 700 0 0 0 0 0 0\n' });
    expect(await hostCpu(proc)).toEqual({ busy: 3, total: 10 });
    expect(await hostCpu(join(proc, 'missing'))).toBeUndefined();
  });
});
