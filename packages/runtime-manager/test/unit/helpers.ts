// Builders for pods and runtime snapshots used by the pure-logic tests.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type {
  ContainerState,
  ContainerStatus,
  PodStatus,
  SandboxStatus,
} from '../../src/container/runtime.js';
import { hashContainer } from '../../src/kuberuntime/hash.js';

export function pod(
  spec: {
    containers: V1Container[];
    initContainers?: V1Container[];
    restartPolicy?: string;
    hostNetwork?: boolean;
  },
  meta: Partial<V1Pod['metadata']> = {},
): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'uid-1', ...meta },
    spec: spec as V1Pod['spec'],
  };
}

export const c = (name: string, extra: Partial<V1Container> = {}): V1Container => ({
  name,
  image: 'busybox:1',
  ...extra,
});

let seq = 0;
export function cs(
  container: V1Container,
  state: ContainerState,
  extra: Partial<ContainerStatus> = {},
): ContainerStatus {
  seq++;
  return {
    id: { type: 'fake', id: `${container.name}-${seq}` },
    name: container.name,
    state,
    createdAt: new Date(1_000 + seq),
    image: container.image ?? '',
    imageRef: 'sha256:x',
    hash: hashContainer(container),
    restartCount: 0,
    ...extra,
  };
}

export function sandbox(extra: Partial<SandboxStatus> = {}): SandboxStatus {
  return {
    id: 'sb-1',
    state: 'ready',
    attempt: 0,
    createdAt: new Date(1),
    ip: '10.0.0.2',
    additionalIps: [],
    hostNetwork: false,
    ...extra,
  };
}

export function status(sandboxes: SandboxStatus[], containers: ContainerStatus[] = []): PodStatus {
  return {
    uid: 'uid-1',
    name: 'p',
    namespace: 'ns',
    ips: [],
    sandboxStatuses: sandboxes,
    containerStatuses: containers,
    timestamp: new Date(),
  };
}
