import bcrypt from 'bcryptjs';
import { describe, expect, test } from 'vitest';
import { htpasswdLine } from '../src/containers/htpasswd.js';
import { normalizeImageRef } from '../src/containers/images-in-node.js';
import { cgroupParentFrom, containerdConfig, registryHostsToml } from '../src/containers/node-config.js';

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

describe('normalizeImageRef', () => {
  test.each([
    ['kubelet-harness/pause:abc', 'docker.io/kubelet-harness/pause:abc'],
    ['busybox', 'docker.io/library/busybox:latest'],
    ['registry:5000/kh/busybox:1', 'registry:5000/kh/busybox:1'],
    ['localhost/x', 'localhost/x:latest'],
    ['quay.io/a/b@sha256:00', 'quay.io/a/b@sha256:00'],
  ])('%s -> %s', (ref, normalized) => {
    expect(normalizeImageRef(ref)).toBe(normalized);
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
  });

  test('the registry host is reached over plain http', () => {
    expect(registryHostsToml('registry:5000')).toMatch(
      /server = "http:\/\/registry:5000"[\s\S]*\[host\."http:\/\/registry:5000"\]/,
    );
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
