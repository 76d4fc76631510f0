import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  type ContainerConfig,
  CriClient,
  type DeepPartial,
  FailedPreconditionError,
  InvalidArgumentError,
  MountPropagation,
  SecurityProfile_ProfileType,
} from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { hostDevices } from '../src/core/host_privileges.js';
import { docker, ENGINE_ENDPOINT, ShimHarness, waitFor } from './harness.js';

// Security context, privilege and mount propagation against the Engine under test, checked from inside
// the containers (/proc/self/status, syscalls that must fail or succeed), as critest checks them.

const run = promisify(execFile);
const h = new ShimHarness();
let profiles: string;
beforeAll(async () => {
  await h.start();
  profiles = join(h.dir, 'seccomp');
  await mkdir(profiles);
  const errnoFor = (names: string[]) =>
    JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names, action: 'SCMP_ACT_ERRNO' }] });
  await writeFile(join(profiles, 'block-hostname.json'), errnoFor(['sethostname']));
  await writeFile(join(profiles, 'block-chmod.json'), errnoFor(['chmod', 'fchmodat']));
});
afterAll(async () => {
  await h.cleanup();
});

async function sh(containerId: string, cmd: string) {
  const r = await h.client.execSync({ containerId, cmd: ['sh', '-c', cmd], timeout: 10n });
  return { code: r.exitCode, out: Buffer.from(r.stdout).toString(), err: Buffer.from(r.stderr).toString() };
}

/** A /proc/<pid>/status field: CapBnd as a bigint mask, others as text. */
function statusField(status: string, field: string): string {
  const value = new RegExp(`^${field}:\\s*(\\S+)$`, 'm').exec(status)?.[1];
  if (value === undefined) throw new Error(`no ${field} in ${status}`);
  return value;
}
const capMask = (status: string) => BigInt(`0x${statusField(status, 'CapBnd')}`);

async function containerIn(
  pod: Awaited<ReturnType<ShimHarness['runPod']>>,
  name: string,
  linux: DeepPartial<ContainerConfig['linux']>,
  extra: DeepPartial<ContainerConfig> = {},
): Promise<string> {
  return h.runContainer(pod.podId, pod.config, name, { linux, ...extra });
}

const hostStatus = () => readFile('/proc/self/status', 'utf8');
// Docker 20.10 can name the capabilities up to CAP_AUDIT_READ (37); newer ones it cannot grant.
const DOCKER_NAMED_CAPS = (1n << 38n) - 1n;

/** A capability set a privileged container should get: the host's, as far as Docker can name them. */
function expectHostCapabilities(capBnd: bigint, host: bigint): void {
  expect(capBnd & ~host).toBe(0n);
  expect(capBnd & DOCKER_NAMED_CAPS).toBe(host & DOCKER_NAMED_CAPS);
}

describe('seccomp', () => {
  it('runs containers unconfined unless told, and with the runtime default from either field', async () => {
    const pod = await h.runPod();
    const seccompOf = async (linux: DeepPartial<ContainerConfig['linux']>, name: string) =>
      statusField((await sh(await containerIn(pod, name, linux), 'cat /proc/self/status')).out, 'Seccomp');
    expect(await seccompOf({}, 'none')).toBe('0');
    expect(await seccompOf({ securityContext: { seccompProfilePath: 'unconfined' } }, 'unconfined')).toBe(
      '0',
    );
    expect(await seccompOf({ securityContext: { seccompProfilePath: 'runtime/default' } }, 'runtime')).toBe(
      '2',
    );
    expect(await seccompOf({ securityContext: { seccompProfilePath: 'docker/default' } }, 'docker')).toBe(
      '2',
    );
    expect(
      await seccompOf(
        { securityContext: { seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault } } },
        'field',
      ),
    ).toBe('2');
  });

  it('applies a localhost profile: chmod blocked', async () => {
    const pod = await h.runPod();
    const id = await containerIn(pod, 'chmod', {
      securityContext: { seccompProfilePath: `localhost/${join(profiles, 'block-chmod.json')}` },
    });
    const r = await sh(id, 'chmod 400 /');
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('Operation not permitted');
    expect((await sh(id, 'touch /x && echo ok')).out).toBe('ok\n');
  });

  it('blocks sethostname with SYS_ADMIN by profile, allows it unconfined, and the default needs the capability', async () => {
    const pod = await h.runPod();
    const hostname = async (name: string, securityContext: DeepPartial<ContainerConfig['linux']>) =>
      (await sh(await containerIn(pod, name, securityContext), 'hostname kh-new')).code;
    const sysAdmin = { addCapabilities: ['SYS_ADMIN'] };
    const blocking = {
      profileType: SecurityProfile_ProfileType.Localhost,
      localhostRef: join(profiles, 'block-hostname.json'),
    };
    expect(
      await hostname('blocked', { securityContext: { capabilities: sysAdmin, seccomp: blocking } }),
    ).not.toBe(0);
    expect(
      await hostname('unconfined', {
        securityContext: { capabilities: sysAdmin, seccompProfilePath: 'unconfined' },
      }),
    ).toBe(0);
    expect(
      await hostname('default-admin', {
        securityContext: { capabilities: sysAdmin, seccompProfilePath: 'runtime/default' },
      }),
    ).toBe(0);
    expect(
      await hostname('default', { securityContext: { seccompProfilePath: 'runtime/default' } }),
    ).not.toBe(0);
  });

  it('refuses a profile path without localhost/ at CreateContainer, leaving nothing behind', async () => {
    const pod = await h.runPod();
    const bare = join(profiles, 'block-hostname.json');
    const attempt = containerIn(pod, 'bare', { securityContext: { seccompProfilePath: bare } });
    await expect(attempt).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(attempt).rejects.toThrow(/seccomp_profile_path/);
    const missing = containerIn(pod, 'missing', {
      securityContext: { seccompProfilePath: `localhost/${join(profiles, 'none.json')}` },
    });
    await expect(missing).rejects.toThrow(/cannot be read: ENOENT/);
    expect((await h.client.listContainers({ filter: { podSandboxId: pod.podId } })).containers).toEqual([]);
  });

  it("applies the sandbox's profile to its pause container", async () => {
    const pauseSeccomp = async (podId: string) => {
      const pid = (await docker.getContainer(podId).inspect()).State.Pid;
      return statusField(await readFile(`/proc/${pid}/status`, 'utf8'), 'Seccomp');
    };
    const plain = await h.runPod();
    const filtered = await h.runPod({
      linux: { securityContext: { seccompProfilePath: `localhost/${join(profiles, 'block-chmod.json')}` } },
    });
    expect(await pauseSeccomp(plain.podId)).toBe('0');
    expect(await pauseSeccomp(filtered.podId)).toBe('2');
  });
});

describe('privileged', () => {
  it('gets the host bounding set, all host devices, no seccomp and nothing masked', async () => {
    const pod = await h.runPod({ linux: { securityContext: { privileged: true } } });
    const blocking = `localhost/${join(profiles, 'block-hostname.json')}`;
    const id = await containerIn(pod, 'priv', {
      securityContext: { privileged: true, seccompProfilePath: blocking },
    });
    const normal = await containerIn(pod, 'normal', {});
    const status = (await sh(id, 'cat /proc/self/status')).out;
    const host = capMask(await hostStatus());
    expectHostCapabilities(capMask(status), host);
    expect(statusField(status, 'Seccomp')).toBe('0');
    // The blocking profile is ignored, as the capabilities would allow.
    expect((await sh(id, 'hostname kh-priv')).code).toBe(0);
    expect((await sh(id, 'ip link add name kh0 type bridge && ip link show kh0')).code).toBe(0);
    expect((await sh(normal, 'ip link add name kh1 type bridge')).code).not.toBe(0);
    const extra = (await hostDevices()).find((d) => /^\/dev\/(loop|kvm|fuse)/.test(d));
    if (!extra) throw new Error('the host has no loop, kvm or fuse device to look for');
    expect((await sh(id, `[ -c ${extra} ] || [ -b ${extra} ]`)).code).toBe(0);
    expect((await sh(normal, `[ -e ${extra} ]`)).code).not.toBe(0);
    // Docker masks /proc/keys and makes /proc/sys read-only (among others) in a container that is not privileged.
    const systemPaths = async (c: string) =>
      (await sh(c, 'grep -cE " /proc/(keys|sys) " /proc/self/mountinfo')).out.trim();
    expect(await systemPaths(id)).toBe('0');
    expect(await systemPaths(normal)).toBe('2');
  });

  it('makes the pause container of a privileged sandbox privileged too', async () => {
    const pod = await h.runPod({ linux: { securityContext: { privileged: true } } });
    const pid = (await docker.getContainer(pod.podId).inspect()).State.Pid;
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    expectHostCapabilities(capMask(status), capMask(await hostStatus()));
    expect(statusField(status, 'Seccomp')).toBe('0');
  });

  it('adds ALL capabilities the host has, and drops ALL', async () => {
    const pod = await h.runPod();
    const all = await containerIn(pod, 'all', {
      securityContext: { capabilities: { addCapabilities: ['ALL'] } },
    });
    expectHostCapabilities(
      capMask((await sh(all, 'cat /proc/self/status')).out),
      capMask(await hostStatus()),
    );
    const none = await containerIn(pod, 'none', {
      securityContext: { capabilities: { dropCapabilities: ['ALL'] } },
    });
    expect(capMask((await sh(none, 'cat /proc/self/status')).out)).toBe(0n);
  });

  it('sets no_new_privs only when asked', async () => {
    const pod = await h.runPod();
    const nnp = async (name: string, noNewPrivs: boolean) =>
      statusField(
        (await sh(await containerIn(pod, name, { securityContext: { noNewPrivs } }), 'cat /proc/self/status'))
          .out,
        'NoNewPrivs',
      );
    expect(await nnp('nnp', true)).toBe('1');
    expect(await nnp('free', false)).toBe('0');
  });
});

describe('on a node container that Docker 20.10 started with ALL capabilities', () => {
  it('still runs privileged pods: the capabilities Docker cannot name are not asked for', async () => {
    // Such a node's bounding set lacks what Docker 20.10 cannot name (PERFMON, BPF, CHECKPOINT_RESTORE)
    // besides what it dropped: a shim there must not drop them by name either, Docker would refuse.
    const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
    const socket = join(h.dir, 'node.sock');
    const child = spawn(
      'setpriv',
      [
        '--bounding-set',
        '-perfmon,-bpf,-checkpoint_restore',
        process.execPath,
        cli,
        '--listen',
        `unix://${socket}`,
        '--docker-endpoint',
        ENGINE_ENDPOINT,
      ].concat([
        '--pod-infra-container-image',
        h.images.pause,
        '--restrict-oom-score-adj',
        '--network-plugin',
        'docker',
      ]),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    onTestFinished(() => {
      child.kill('SIGTERM');
    });
    await waitFor(
      async () => (output.includes('serving CRI') ? true : undefined),
      'the shim with a smaller bounding set',
    );
    const client = await CriClient.connect(`unix://${socket}`);
    onTestFinished(() => client.close());
    const shimBounding = capMask(await readFile(`/proc/${child.pid}/status`, 'utf8'));
    const podConfig = h.podConfig({ linux: { securityContext: { privileged: true } } });
    const { podSandboxId } = await client.runPodSandbox({ config: podConfig });
    const { containerId } = await client.createContainer({
      podSandboxId,
      config: h.containerConfig('node-priv', { linux: { securityContext: { privileged: true } } }),
      sandboxConfig: podConfig,
    });
    await client.startContainer({ containerId });
    const r = await client.execSync({ containerId, cmd: ['cat', '/proc/self/status'], timeout: 10n });
    expectHostCapabilities(capMask(Buffer.from(r.stdout).toString()), shimBounding);
  });
});

describe('mount propagation', () => {
  /** A host directory bind-mounted onto itself and made shared, as kubelet's pod volumes dir is. */
  async function sharedSource(): Promise<{ src: string; flags: string }> {
    const base = await mkdtemp(join(h.dir, 'prop-'));
    const src = join(base, 'src');
    const flags = join(base, 'flags');
    await mkdir(join(src, 'sub'), { recursive: true });
    await mkdir(flags);
    await writeFile(join(flags, 'flag'), '');
    await run('mount', ['--bind', src, src]);
    onTestFinished(async () => {
      await run('umount', ['-R', '-l', src]).catch(() => undefined);
    });
    await run('mount', ['--make-rshared', src]);
    return { src, flags };
  }

  async function propagationContainer(name: string, src: string, propagation: MountPropagation) {
    const pod = await h.runPod({ linux: { securityContext: { privileged: true } } });
    const id = await containerIn(
      pod,
      name,
      { securityContext: { privileged: true } },
      { mounts: [{ hostPath: src, containerPath: '/vol', propagation }] },
    );
    const { status } = await h.client.containerStatus({ containerId: id });
    expect(status?.mounts).toEqual([
      expect.objectContaining({ hostPath: src, containerPath: '/vol', readonly: false, propagation }),
    ]);
    return id;
  }

  /** Mounts on the host after the container started, then inside the container; what each side sees. */
  async function exchange(id: string, src: string, flags: string) {
    await run('mount', ['--bind', flags, join(src, 'sub')]);
    const inContainer = (await sh(id, 'ls -A /vol/sub')).out.trim();
    expect((await sh(id, 'mkdir -p /vol/back && mount --bind /etc /vol/back')).code).toBe(0);
    const onHost = await readdir(join(src, 'back'));
    return { hostToContainer: inContainer === 'flag', containerToHost: onHost.length > 0 };
  }

  it('rprivate: nothing crosses', async () => {
    const { src, flags } = await sharedSource();
    const id = await propagationContainer('private', src, MountPropagation.PROPAGATION_PRIVATE);
    expect(await exchange(id, src, flags)).toEqual({ hostToContainer: false, containerToHost: false });
  });

  it('rslave: host mounts reach the container, not the other way', async () => {
    const { src, flags } = await sharedSource();
    const id = await propagationContainer('slave', src, MountPropagation.PROPAGATION_HOST_TO_CONTAINER);
    expect(await exchange(id, src, flags)).toEqual({ hostToContainer: true, containerToHost: false });
  });

  it('rshared: both ways', async () => {
    const { src, flags } = await sharedSource();
    const id = await propagationContainer('shared', src, MountPropagation.PROPAGATION_BIDIRECTIONAL);
    expect(await exchange(id, src, flags)).toEqual({ hostToContainer: true, containerToHost: true });
  });

  it('refuses rshared and rslave at CreateContainer when the host mount is private', async () => {
    const pod = await h.runPod();
    // A mount of its own, made private: the mount h.dir lies on need not be (a node container's
    // root is not, and rslave would be right to accept it).
    const src = await mkdtemp(join(h.dir, 'private-'));
    await run('mount', ['--bind', src, src]);
    onTestFinished(async () => {
      await run('umount', ['-l', src]).catch(() => undefined);
    });
    await run('mount', ['--make-private', src]);
    for (const propagation of [
      MountPropagation.PROPAGATION_BIDIRECTIONAL,
      MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
    ]) {
      const attempt = containerIn(
        pod,
        `p${propagation}`,
        {},
        { mounts: [{ hostPath: src, containerPath: '/vol', propagation }] },
      );
      await expect(attempt).rejects.toBeInstanceOf(FailedPreconditionError);
      await expect(attempt).rejects.toThrow(/is not shared|neither shared nor slave/);
    }
  });
});
