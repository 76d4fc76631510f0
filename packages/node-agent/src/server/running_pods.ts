// /runningpods/: the pods the runtime is running, as the kubelet reports them (names, UIDs and
// containers only), whether or not the API still knows them.

import type { RunningPod } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import type { RunningPodsProvider } from './server.js';

export function runningPodsToAPI(pods: RunningPod[]): V1Pod[] {
  return pods.map((p) => ({
    metadata: { name: p.name, namespace: p.namespace, uid: p.uid },
    spec: { containers: p.containers.map((c) => ({ name: c.name, image: c.image })) },
  }));
}

export function runningPodsProvider(runtime: {
  getPods(all: boolean): Promise<RunningPod[]>;
}): RunningPodsProvider {
  return { getRunningPods: async () => runningPodsToAPI(await runtime.getPods(false)) };
}
