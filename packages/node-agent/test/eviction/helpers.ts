import { newCrashLoopBackoff, type Runtime } from '@kh/runtime-manager';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { EvictionStatus, Observations, PodUsage } from '../../src/eviction/types.js';

export const Mi = 1024 * 1024;
export const Gi = 1024 * Mi;

export function pod(
  name: string,
  opts: {
    priority?: number;
    containers?: V1Container[];
    annotations?: Record<string, string>;
    volumes?: V1Pod['spec'] extends infer S ? (S extends { volumes?: infer V } ? V : never) : never;
    tolerations?: NonNullable<V1Pod['spec']>['tolerations'];
    terminationGracePeriodSeconds?: number;
  } = {},
): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: opts.annotations },
    spec: {
      priority: opts.priority,
      containers: opts.containers ?? [{ name: 'app', image: 'busybox' }],
      volumes: opts.volumes,
      tolerations: opts.tolerations,
      terminationGracePeriodSeconds: opts.terminationGracePeriodSeconds,
    },
  };
}

export class ScriptedSignals {
  constructor(public current: Observations) {}
  calls = 0;
  async observe(): Promise<Observations> {
    this.calls++;
    return structuredClone(this.current);
  }
}

export class ScriptedStats {
  constructor(public current: PodUsage[] = []) {}
  async podStats(): Promise<PodUsage[]> {
    return structuredClone(this.current);
  }
}

export class RecordingKiller {
  evicted: { pod: V1Pod; isEvicted: boolean; grace: number; status: EvictionStatus }[] = [];
  failFor = new Set<string>();
  async killPod(pod: V1Pod, isEvicted: boolean, grace: number, status: EvictionStatus): Promise<void> {
    if (this.failFor.has(pod.metadata?.name ?? '')) throw new Error('kill failed');
    this.evicted.push({ pod, isEvicted, grace, status });
  }
}

export class RecordingEvents {
  events: {
    pod: string;
    annotations: Record<string, string>;
    type: string;
    reason: string;
    message: string;
  }[] = [];
  annotatedEvent(
    pod: V1Pod,
    annotations: Record<string, string>,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.events.push({ pod: pod.metadata?.name ?? '', annotations, type, reason, message });
  }
}

export function memoryObs(availableBytes: number, capacity = 8 * Gi): Observations {
  return {
    'memory.available': { available: availableBytes, capacity },
    'nodefs.available': { available: 50 * Gi, capacity: 100 * Gi },
    'nodefs.inodesFree': { available: 900_000, capacity: 1_000_000 },
    'pid.available': { available: 4_000_000, capacity: 4_194_304 },
  };
}

/** One pod worker pass through the runtime manager; a step that fails fails the test. */
export async function syncPodOnce(
  runtime: Pick<Runtime, 'getPodStatus' | 'syncPod'>,
  p: V1Pod,
): Promise<void> {
  const s = await runtime.getPodStatus(p.metadata?.uid ?? '', p.metadata?.name ?? '', 'default');
  const r = await runtime.syncPod(p, s, [], newCrashLoopBackoff());
  expect(r.steps.filter((x) => x.error)).toEqual([]);
}

/** Whether any of the pod's containers runs, as the runtime reports it. */
export async function podIsRunning(runtime: Pick<Runtime, 'getPodStatus'>, p: V1Pod): Promise<boolean> {
  const s = await runtime.getPodStatus(p.metadata?.uid ?? '', p.metadata?.name ?? '', 'default');
  return s.containerStatuses.some((c) => c.state === 'running');
}
