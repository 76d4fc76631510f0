import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Image, RuntimeStatus } from '@kh/runtime-manager';
import { resolveKubeletConfiguration } from '../../src/config/resolve.js';
import { defaultKubeletConfiguration, type KubeletConfiguration } from '../../src/config/types.js';
import type { Kubelet } from '../../src/kubelet.js';
import { type KubeletDeps, newKubelet } from '../../src/main_kubelet.js';
import type { NodeRuntime } from '../../src/runtime/node_runtime.js';
import { testSnapshot } from './snapshot.js';

/** A healthy containerd 1.6.20 with the given images; `down` makes every call fail like a dead socket. */
export class StubNodeRuntime implements NodeRuntime {
  down = false;
  /** Every pod CIDR the kubelet passed on. */
  readonly podCidrs: string[] = [];
  constructor(public images: Image[] = []) {}
  type() {
    return 'containerd';
  }
  async version() {
    if (this.down) throw new Error('Version: connection refused');
    return '1.6.20';
  }
  async status(): Promise<RuntimeStatus> {
    if (this.down) throw new Error('Status: connection refused');
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
      runtimeHandlers: [
        { name: '', supportsRecursiveReadOnlyMounts: true, supportsUserNamespaces: true },
        { name: 'runc-old', supportsRecursiveReadOnlyMounts: false, supportsUserNamespaces: false },
      ],
    };
  }
  async updatePodCIDR(podCidr: string) {
    if (this.down) throw new Error('UpdateRuntimeConfig: connection refused');
    this.podCidrs.push(podCidr);
  }
  async listImages() {
    if (this.down) throw new Error('ListImages: connection refused');
    return this.images;
  }
}

/**
 * A Kubelet on loopback: the default configuration with `config` on top (ports 0 unless given),
 * a node named `nodeName`, the test machine, a fresh cert dir and a StubNodeRuntime; `deps`
 * replaces any of these.
 */
export function newTestKubelet(
  nodeName: string,
  config: Partial<KubeletConfiguration> = {},
  deps: Partial<KubeletDeps> = {},
): { kubelet: Kubelet; config: KubeletConfiguration } {
  const full = { ...defaultKubeletConfiguration(), address: '127.0.0.1', port: 0, healthzPort: 0, ...config };
  const kubelet = newKubelet({
    config: full,
    resolved: resolveKubeletConfiguration(full),
    identity: { nodeName, hostname: nodeName, os: 'linux', arch: 'amd64', nodeLabels: {}, taints: [] },
    nodeIP: '127.0.0.1',
    machineInfo: testSnapshot().machine,
    certDir: join(mkdtempSync(join(tmpdir(), 'kh-kubelet-')), 'pki'),
    runtime: new StubNodeRuntime(),
    ...deps,
  });
  return { kubelet, config: full };
}

/** Runs a Kubelet until stop(), which aborts it and waits for its loops to end. */
export function runKubelet(kubelet: Kubelet): { stop(): Promise<void> } {
  const abort = new AbortController();
  const running = kubelet.run(abort.signal);
  return {
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}
