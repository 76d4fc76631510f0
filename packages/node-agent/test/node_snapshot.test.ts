import { FakeClock } from '@kh/apimachinery';
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import { resolveKubeletConfiguration } from '../src/config/resolve.js';
import { defaultKubeletConfiguration } from '../src/config/types.js';
import { NodeStatusSnapshotter } from '../src/nodestatus/snapshot.js';
import type { NodeRuntime } from '../src/runtime/node_runtime.js';
import { noPressure } from '../src/types/pressure.js';
import { testSnapshot } from './helpers/snapshot.js';

function snapshotter(
  apiNode: () => V1Node | undefined = () => undefined,
  nodeShutdown?: { shutdownStatus(): string | undefined },
) {
  const config = defaultKubeletConfiguration();
  const runtime = {
    type: () => 'containerd',
    version: async () => '1.7.24',
    listImages: async () => [],
  } as unknown as NodeRuntime;
  return new NodeStatusSnapshotter({
    config,
    resolved: resolveKubeletConfiguration(config),
    identity: {
      nodeName: 'node-a',
      hostname: 'node-a',
      os: 'linux',
      arch: 'amd64',
      nodeLabels: {},
      taints: [],
    },
    nodeIP: '10.0.0.5',
    machineInfo: testSnapshot().machine,
    kubeletVersion: 'v1.33.0-kh',
    runtime,
    runtimeState: {
      runtimeErrors: () => [],
      networkErrors: () => [],
      runtimeFeatures: () => undefined,
      runtimeHandlers: () => undefined,
    },
    pressure: noPressure,
    ...(nodeShutdown ? { nodeShutdown } : {}),
    clock: new FakeClock(),
    apiNode,
  });
}

describe('the snapshot', () => {
  it("carries the node shutdown manager's status for Ready", async () => {
    let status: string | undefined = 'node is shutting down';
    const s = snapshotter(undefined, { shutdownStatus: () => status });
    expect((await s.snapshot()).nodeShutdownError).toBe('node is shutting down');
    status = undefined;
    expect((await s.snapshot()).nodeShutdownError).toBeUndefined();
    expect((await snapshotter().snapshot()).nodeShutdownError).toBeUndefined();
  });
});

const dummyPod = {
  metadata: { name: 'p', namespace: 'default', uid: 'p' },
  spec: {
    nodeName: 'node-a',
    nodeSelector: { 'example.com/pool': 'blue' },
    containers: [
      {
        name: 'c',
        image: 'busybox',
        resources: { requests: { 'dummy.com/dummy': '200' }, limits: { 'dummy.com/dummy': '200' } },
      },
    ],
  },
};

describe('the node admission sees', () => {
  it("is the node lister's Node once listed: labels and extended resources others set", async () => {
    let listed: V1Node | undefined;
    const s = snapshotter(() => listed);
    await s.snapshot();
    const admit = new PredicateAdmitHandler(() => s.currentNode());
    // Before the first list: the node this agent registers, without the operator's label.
    expect(admit.admit({ pod: dummyPod, otherPods: [] })).toMatchObject({
      admit: false,
      reason: 'NodeAffinity',
    });
    listed = {
      metadata: {
        name: 'node-a',
        labels: { 'kubernetes.io/hostname': 'node-a', 'example.com/pool': 'blue' },
      },
      status: { capacity: { 'dummy.com/dummy': '123' }, allocatable: { 'dummy.com/dummy': '123' } },
    };
    const current = s.currentNode();
    expect(current.metadata?.labels).toMatchObject({ 'example.com/pool': 'blue' });
    expect(current.status?.capacity).toMatchObject({ cpu: '2', 'dummy.com/dummy': '123' });
    // Its status is the snapshot's, set on a copy: the lister's object is left as listed.
    expect(listed.status?.capacity).toEqual({ 'dummy.com/dummy': '123' });
    expect(admit.admit({ pod: dummyPod, otherPods: [] })).toMatchObject({
      admit: false,
      reason: 'OutOfdummy.com/dummy',
    });
    // A label the operator removes through the API stops deciding at once.
    listed = { ...listed, metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a' } } };
    expect(admit.admit({ pod: dummyPod, otherPods: [] })).toMatchObject({
      admit: false,
      reason: 'NodeAffinity',
    });
  });
});
