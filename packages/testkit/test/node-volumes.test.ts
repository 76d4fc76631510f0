import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { NODE_VOLUMES, nodeHostDirs, nodeVolumeMounts } from '../src/containers/node-container.js';

describe('nodeVolumeMounts: what a node asks the engine for under HostConfig.Mounts', () => {
  const labels = { 'kh.run': 'r1', 'kh.role': 'node', 'kh.pid': '42' };

  test('by default every node volume is an anonymous local volume carrying the labels', () => {
    expect(nodeVolumeMounts(labels)).toEqual(
      NODE_VOLUMES.map((target) => ({
        Type: 'volume',
        Source: '',
        Target: target,
        VolumeOptions: { NoCopy: false, Labels: labels, DriverConfig: { Name: 'local', Options: {} } },
      })),
    );
  });

  test('on a host directory (withVolumesOnTmpfs) each is bound from its own subdirectory of it, and no volume is made', () => {
    expect(nodeVolumeMounts(labels, '/tmp/kh-volumes-x')).toEqual([
      { Type: 'bind', Source: '/tmp/kh-volumes-x/containerd', Target: '/var/lib/containerd' },
      { Type: 'bind', Source: '/tmp/kh-volumes-x/docker', Target: '/var/lib/docker' },
      { Type: 'bind', Source: '/tmp/kh-volumes-x/kubelet', Target: '/var/lib/kubelet' },
    ]);
  });
});

describe('nodeHostDirs: what clean-up unmounts and removes with a leftover node', () => {
  test("the node's shared dir and its volumes' tmpfs (once for its three subdirectories), nothing else", () => {
    const tmp = tmpdir();
    expect(
      nodeHostDirs([
        { Type: 'bind', Source: '/sys/fs/cgroup' },
        { Type: 'bind', Source: join(tmp, 'kh-node-a1') },
        ...NODE_VOLUMES.map((t) => ({
          Type: 'bind',
          Source: join(tmp, 'kh-volumes-b2', t.split('/').pop()!),
        })),
        { Type: 'bind', Source: join(tmp, 'other-dir') },
        { Type: 'volume', Source: join(tmp, 'kh-volumes-c3') },
        { Type: 'bind', Source: '/work/kh-node-x' },
      ]),
    ).toEqual([join(tmp, 'kh-node-a1'), join(tmp, 'kh-volumes-b2')]);
  });
});
