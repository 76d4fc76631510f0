import { describe, expect, test } from 'vitest';
import { NODE_VOLUMES, nodeVolumeMounts } from '../src/containers/node-container.js';

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
