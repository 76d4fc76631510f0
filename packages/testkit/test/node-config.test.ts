import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, test } from 'vitest';
import { containerdConfig, registryHostsToml } from '../src/containers/containerd-runtime.js';
import { dockerdCommand } from '../src/containers/docker-runtime.js';
import { htpasswdLine } from '../src/containers/htpasswd.js';
import {
  cgroupParentFrom,
  KUBELET_SUBORDINATE_IDS,
  kubeletSubordinateIds,
  nodeInitScript,
  runtimeCtlScript,
} from '../src/containers/node-config.js';

describe('cgroupParentFrom', () => {
  test('cgroup v1: the memory controller path plus /kubepods', () => {
    const v1 = `12:pids:/docker/abc
11:cpu,cpuacct:/docker/abc
9:memory:/docker/abc
1:name=systemd:/docker/abc
0::/`;
    expect(cgroupParentFrom(v1)).toBe('/docker/abc/kubepods');
  });

  test('cgroup v2: the unified path plus /kubepods', () => {
    expect(cgroupParentFrom('0::/system.slice/docker-abc.scope\n')).toBe(
      '/system.slice/docker-abc.scope/kubepods',
    );
    expect(cgroupParentFrom('0::/\n')).toBe('/kubepods');
  });

  test('rejects text without a usable line', () => {
    expect(() => cgroupParentFrom('garbage')).toThrow(/Cannot find the node's cgroup/);
  });
});

describe('runtime configuration', () => {
  test('containerd config carries the settings this machine needs', () => {
    const toml = containerdConfig({
      pauseImage: 'docker.io/kubelet-harness/pause:x',
      socketPath: '/run/kh/c.sock',
    });
    expect(toml).toContain('address = "/run/kh/c.sock"');
    expect(toml).toContain('sandbox_image = "docker.io/kubelet-harness/pause:x"');
    expect(toml).toContain('restrict_oom_score_adj = true');
    expect(toml).toContain('config_path = "/etc/containerd/certs.d"');
    expect(toml).toContain('bin_dir = "/usr/lib/cni"');
    expect(toml).toContain('root = "/var/lib/containerd"');
    expect(toml).toContain('disable_apparmor = true');
    expect(toml).not.toContain('netns_mounts_under_state_dir');
    // containerd's own default (the node's loopback) unless asked.
    expect(toml).not.toContain('stream_server_address');
  });

  test("a node's streaming server on the node's own address, for clients outside the node", () => {
    const toml = containerdConfig({
      pauseImage: 'p:1',
      socketPath: '/run/kh/c.sock',
      streamServerAddress: '',
    });
    expect(toml).toContain('stream_server_address = ""');
  });

  test("a HostContainerd's containerd keeps everything under its own directory", () => {
    const toml = containerdConfig({ pauseImage: 'p:1', socketPath: '/d/containerd.sock', hostDir: '/d' });
    for (const line of [
      'root = "/d/root"',
      'state = "/d/state"',
      'address = "/d/containerd.sock"',
      'path = "/d/opt"',
      'Root = "/d/runc"',
      'conf_dir = "/d/cni"',
      'max_conf_num = 1',
      'netns_mounts_under_state_dir = true',
      'stream_server_address = "127.0.0.1"',
      'restrict_oom_score_adj = true',
    ])
      expect(toml).toContain(line);
    // Nothing shared with the host's own containerd or another HostContainerd.
    expect(toml).not.toMatch(/"\/(var|run|etc)\//);
  });

  test('runtime handlers get a runtimes table each, and one of them may be the default', () => {
    const toml = containerdConfig({
      pauseImage: 'p:1',
      socketPath: '/run/kh/c.sock',
      handlers: {
        crun: { options: { BinaryName: '/usr/bin/crun' } },
        runsc: { runtimeType: 'io.containerd.runsc.v1', options: { TypeUrl: 'x', Debug: true } },
      },
      defaultHandler: 'crun',
    });
    expect(toml).toContain('default_runtime_name = "crun"');
    expect(toml).toMatch(
      /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\."crun"\]\n {2}runtime_type = "io\.containerd\.runc\.v2"\n/,
    );
    expect(toml).toContain('runtimes."crun".options]\n  BinaryName = "/usr/bin/crun"\n');
    expect(toml).toContain('runtimes."runsc"]\n  runtime_type = "io.containerd.runsc.v1"\n');
    expect(toml).toContain('runtimes."runsc".options]\n  TypeUrl = "x"\n  Debug = true\n');
    // runc stays, for pods whose RuntimeClass names it.
    expect(toml).toContain('runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"');
  });

  test("upstream's preconfigured test-handler is runc by another name, in a node and on the host", () => {
    for (const hostDir of [undefined, '/d']) {
      const toml = containerdConfig({
        pauseImage: 'p:1',
        socketPath: '/d/c.sock',
        ...(hostDir ? { hostDir } : {}),
      });
      const table = (name: string) =>
        toml
          .slice(toml.indexOf(`runtimes.${name}]`))
          .split('\n[plugins')[0]
          ?.replace(name, 'X');
      const options = (name: string) =>
        toml
          .slice(toml.indexOf(`runtimes.${name}.options]`))
          .split('\n[')[0]
          ?.replace(name, 'X');
      expect(table('"test-handler"')).toBe(table('runc'));
      expect(options('"test-handler"')).toBe(options('runc'));
      expect(options('runc')).toContain('SystemdCgroup = false');
    }
  });

  test('dockerd trusts both test registries for plain http', () => {
    const cmd = dockerdCommand('/run/kh/docker.sock').join(' ');
    expect(cmd).toContain('--insecure-registry registry:5000');
    expect(cmd).toContain('--insecure-registry private-registry:5000');
  });

  test("dockerd has upstream's preconfigured test-handler as a runtime running runc", () => {
    expect(dockerdCommand('/run/kh/docker.sock').join(' ')).toContain('--add-runtime test-handler=runc');
  });

  test('the registry host is reached over plain http', () => {
    expect(registryHostsToml('registry:5000')).toMatch(
      /server = "http:\/\/registry:5000"[\s\S]*\[host\."http:\/\/registry:5000"\]/,
    );
  });
});

describe('kubeletSubordinateIds', () => {
  test("writes the kubelet user's one range to /etc/subuid and /etc/subgid, and makes the user", () => {
    const { files, setup } = kubeletSubordinateIds(KUBELET_SUBORDINATE_IDS);
    expect(files).toEqual([
      { target: '/etc/subuid', content: 'kubelet:65536:7208960\n', mode: 0o644 },
      { target: '/etc/subgid', content: 'kubelet:65536:7208960\n', mode: 0o644 },
    ]);
    expect(setup).toEqual([
      'id -u kubelet >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin kubelet',
    ]);
    // Upstream's sizing: whole 65536-ID ranges from 65536, one for each of the kubelet's default 110 pods.
    expect(KUBELET_SUBORDINATE_IDS.count / 65536).toBe(110);
  });
});

describe('htpasswdLine', () => {
  test('writes user:bcrypt that verifies the password and rejects others', () => {
    const line = htpasswdLine('kh', 's3cret');
    const [user, hash] = line.trim().split(':') as [string, string];
    expect(user).toBe('kh');
    expect(hash).toMatch(/^\$2[aby]\$10\$/);
    expect(bcrypt.compareSync('s3cret', hash)).toBe(true);
    expect(bcrypt.compareSync('wrong', hash)).toBe(false);
  });

  test('rejects user names htpasswd cannot hold', () => {
    expect(() => htpasswdLine('a:b', 'x')).toThrow(/Invalid registry user name/);
    expect(() => htpasswdLine('', 'x')).toThrow(/Invalid registry user name/);
  });
});

// The two scripts run here on the host with a plain `sleep` as the "runtime", in a private state dir.
describe('kh-node-init and kh-runtime', () => {
  let dir = '';
  const script = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, 0o755);
    return path;
  };
  const pidOf = () => Number(readFileSync(join(dir, 'kh-runtime.pid'), 'utf8'));
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const waitFor = async (what: string, cond: () => boolean) => {
    for (let i = 0; i < 100; i++) {
      if (cond()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const runtimeStarted = () =>
    waitFor('the runtime pid', () => {
      try {
        return pidOf() > 0;
      } catch {
        return false;
      }
    });
  /** `slowRm`: the supervisor's `rm` lingers after removing, as a busy machine can make it. */
  const start = ({ slowRm = false } = {}) => {
    dir = mkdtempSync(join(tmpdir(), 'kh-init-test-'));
    const init = script('init', nodeInitScript(dir));
    const ctl = script('ctl', runtimeCtlScript(dir));
    let env = process.env;
    if (slowRm) {
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      script('bin/rm', '#!/bin/sh\n/bin/rm "$@"; sleep 0.5\n');
      env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    }
    const child = spawn(init, ['sleep', '600'], { stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const runCtl = (arg: string) => spawnSync(ctl, [arg], { encoding: 'utf8' });
    return { child, exited, runCtl, stderr: () => stderr };
  };
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('stop keeps the node alive, start runs the runtime again, TERM ends both', async () => {
    const { child, exited, runCtl, stderr } = start();
    try {
      await runtimeStarted();
      const first = pidOf();
      expect(runCtl('status').stdout).toBe('running\n');
      expect(runCtl('stop').status).toBe(0);
      expect(alive(first)).toBe(false);
      expect(runCtl('status').status).toBe(3);
      expect(child.exitCode).toBeNull();
      expect(runCtl('start').status).toBe(0);
      const second = pidOf();
      expect(second).not.toBe(first);
      expect(alive(second)).toBe(true);
      await waitFor('the supervisor to log the stop', () => stderr().includes('sleep stopped'));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await waitFor('the runtime to end with the node', () => !alive(second));
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('kill SIGKILLs the runtime and the supervisor runs a new one; the node lives on', async () => {
    const { child, runCtl, stderr } = start();
    try {
      await runtimeStarted();
      const first = pidOf();
      expect(runCtl('kill').status).toBe(0);
      expect(alive(first)).toBe(false);
      await waitFor('the supervisor to log the kill', () => stderr().includes('sleep stopped (exit 137)'));
      const second = pidOf();
      expect(second).not.toBe(first);
      expect(alive(second)).toBe(true);
      expect(runCtl('status').stdout).toBe('running\n');
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a kill answered while the supervisor is slow after reaping still restarts the runtime', async () => {
    // kh-runtime kill sees the pid file go and starts the runtime, removing the stop flag, while
    // the supervisor has not yet looked at that flag.
    const { child, runCtl, stderr } = start({ slowRm: true });
    try {
      await runtimeStarted();
      const first = pidOf();
      expect(runCtl('kill').status).toBe(0);
      await waitFor('the supervisor to log the kill', () => stderr().includes('sleep stopped (exit 137)'));
      expect(stderr()).not.toMatch(/without kh-runtime stop/);
      expect(pidOf()).not.toBe(first);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a runtime exit nobody asked for ends the node with its code', async () => {
    const { child, exited, stderr } = start();
    try {
      await runtimeStarted();
      process.kill(pidOf(), 'SIGKILL');
      expect(await exited).toBe(137);
      expect(stderr()).toMatch(/sleep exited with code 137 without kh-runtime stop/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
