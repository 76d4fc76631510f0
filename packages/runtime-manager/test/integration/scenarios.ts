// Sync scenarios shared by the real-runtime suites (containerd, dockershim): each takes a
// manager over a real runtime and an image the runtime already has.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { Backoff, Clock, PodStatus, PodSyncResult, Runtime } from '../../src/types.js';

export interface RealRuntime {
  manager: Runtime;
  /** A fresh manager over the same runtime (agent restart). */
  newManager(): Promise<Runtime>;
  busybox: string;
}

let seq = 0;
export function pod(
  name: string,
  containers: V1Container[],
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
): V1Pod {
  seq++;
  return {
    metadata: { name: `${name}-${seq}`, namespace: 'it', uid: `it-${process.pid}-${name}-${seq}` },
    spec: { terminationGracePeriodSeconds: 2, containers, ...spec },
  };
}

export const sh = (
  image: string,
  name: string,
  script: string,
  extra: Partial<V1Container> = {},
): V1Container => ({
  name,
  image,
  imagePullPolicy: 'IfNotPresent',
  command: ['sh', '-c', script],
  ...extra,
});

export const failures = (r: PodSyncResult) =>
  r.steps.filter((s) => s.error).map((s) => `${s.action} ${s.target}: ${s.reason}: ${s.message}`);

export function status(m: Runtime, p: V1Pod): Promise<PodStatus> {
  return m.getPodStatus(p.metadata!.uid!, p.metadata!.name!, p.metadata!.namespace!);
}

export async function sync(m: Runtime, p: V1Pod, backoff: Backoff): Promise<PodSyncResult> {
  return m.syncPod(p, await status(m, p), [], backoff);
}

/** Polls the runtime until `pred` holds for the pod's status (real containers take real time). */
export async function waitFor(
  m: Runtime,
  p: V1Pod,
  pred: (s: PodStatus) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<PodStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await status(m, p);
    if (pred(s)) return s;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s.containerStatuses)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const state = (s: PodStatus, name: string) => s.containerStatuses.find((c) => c.name === name);

/** A clock that runs with real time but can be pushed ahead, so backoff waits take no real time. */
export class SkewClock implements Clock {
  skewMs = 0;
  now(): number {
    return Date.now() + this.skewMs;
  }
}

export async function killAll(m: Runtime): Promise<void> {
  for (const p of await m.getPods(true)) await m.killPod(undefined, p, 0).catch(() => undefined);
}

export { expect };
