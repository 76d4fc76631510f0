// A runtime manager over the in-memory FakeRuntime, served on a real unix socket, with one
// manual clock driving both the fake's timers (scripted exits) and the manager's backoff.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach } from 'vitest';
import type { Backoff, EventRecorder, PodStatus } from '../../src/container/runtime.js';
import { KubeGenericRuntimeManager, type RuntimeManagerOptions } from '../../src/kuberuntime/manager.js';
import { newCrashLoopBackoff } from '../../src/util/backoff.js';

export interface RecordedEvent {
  pod: string;
  type: string;
  reason: string;
  message: string;
}

export class Harness {
  readonly events: RecordedEvent[] = [];
  readonly recorder: EventRecorder = {
    event: (pod, type, reason, message) =>
      this.events.push({ pod: pod.metadata?.name ?? '', type, reason, message }),
  };
  readonly clients: CriClient[] = [];
  manager!: KubeGenericRuntimeManager;
  backoff!: Backoff;

  private constructor(
    readonly fake: FakeRuntime,
    readonly clock: FakeClock,
    readonly dir: string,
  ) {}

  static async start(opts: Partial<RuntimeManagerOptions> = {}): Promise<Harness> {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const fake = await FakeRuntime.start({ clock });
    const dir = await mkdtemp(join(tmpdir(), 'kh-rm-'));
    const h = new Harness(fake, clock, dir);
    h.manager = await h.newManager(opts);
    h.backoff = newCrashLoopBackoff(h.clock);
    return h;
  }

  get logsDir(): string {
    return join(this.dir, 'logs');
  }

  get podsDir(): string {
    return join(this.dir, 'pods');
  }

  /** A fresh manager and CRI connection over the same runtime, as after an agent restart. */
  async newManager(opts: Partial<RuntimeManagerOptions> = {}): Promise<KubeGenericRuntimeManager> {
    const cri = await CriClient.connect(this.fake.endpoint, { timeoutMs: 10_000 });
    this.clients.push(cri);
    return KubeGenericRuntimeManager.create({
      cri,
      clock: this.clock,
      recorder: this.recorder,
      podLogsRootDir: this.logsDir,
      podsDir: this.podsDir,
      ...opts,
    });
  }

  advance(ms: number): void {
    this.clock.step(ms);
  }

  status(pod: V1Pod, manager = this.manager): Promise<PodStatus> {
    return manager.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!);
  }

  /** getPodStatus + syncPod, as one pod worker iteration. */
  async sync(pod: V1Pod, pullSecrets: Parameters<KubeGenericRuntimeManager['syncPod']>[2] = []) {
    const result = await this.manager.syncPod(pod, await this.status(pod), pullSecrets, this.backoff);
    // Let scripted exits with afterMs 0 fire.
    this.advance(0);
    return result;
  }

  /** RPC names called since `mark` (an index into fake.calls). */
  callsSince(mark: number): string[] {
    return this.fake.calls.slice(mark);
  }

  requests<T>(method: string): T[] {
    return this.fake.callLog.filter((c) => c.method === method).map((c) => c.request as T);
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
    await this.fake.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

let uidSeq = 0;
export function makePod(
  name: string,
  containers: V1Container[],
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
): V1Pod {
  uidSeq++;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}-${uidSeq}` },
    spec: { containers, terminationGracePeriodSeconds: 30, ...spec },
  };
}

export const IMAGE = 'kubelet-harness/busybox:1';

export function ctr(name: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: IMAGE, command: ['sleep', '3600'], ...extra };
}

/** A Harness with the test image, started before each test of the file and stopped after it. */
export function harnessPerTest(set: (h: Harness) => void): void {
  let current: Harness;
  beforeEach(async () => {
    current = await Harness.start();
    current.fake.addImage(IMAGE, 1000);
    set(current);
  });
  afterEach(() => current.stop());
}
