import { resolveKubeletConfiguration } from '../../src/config/resolve.js';
import { defaultKubeletConfiguration } from '../../src/config/types.js';
import type { NodeStatusSnapshot } from '../../src/nodestatus/setters.js';

const GiB = 1n << 30n;

/** A node status snapshot of a 2-core 16 GiB machine running containerd 1.6.20. */
export function testSnapshot(over: Partial<NodeStatusSnapshot> = {}): NodeStatusSnapshot {
  const resolved = resolveKubeletConfiguration(defaultKubeletConfiguration());
  return {
    hostname: 'node-a',
    nodeIP: '10.0.0.5',
    machine: {
      numCores: 2,
      memoryCapacityBytes: 16n * GiB,
      rootfsCapacityBytes: 100n * GiB,
      rootfsInodes: 1000n,
      machineID: 'mid',
      systemUUID: 'uuid',
      bootID: 'boot',
      kernelVersion: '6.1.0',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    maxPods: 110,
    kubeReserved: {},
    systemReserved: {},
    evictionHard: resolved.evictionHard,
    kubeletVersion: 'v1.33.0-kh',
    kubeletPort: 10250,
    runtime: { type: 'containerd', version: '1.6.20' },
    images: [],
    nodeStatusMaxImages: 50,
    runtimeErrors: [],
    networkErrors: [],
    pressure: { memory: false, disk: false, pid: false },
    ...over,
  };
}
