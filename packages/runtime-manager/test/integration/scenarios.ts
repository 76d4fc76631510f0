// Sync scenarios shared by the real-runtime suites (containerd, dockershim): each takes a
// manager over a real runtime and an image the runtime already has.

import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { POD_SUBNET } from '@kh/testkit';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { Backoff, Clock, PodStatus, PodSyncResult, Runtime } from '../../src/container/runtime.js';
import type { KubeGenericRuntimeManager, RuntimeManagerOptions } from '../../src/kuberuntime/manager.js';
import { DefaultRuntimeHelper } from '../../src/kuberuntime/runtime_helper.js';
import { FakeObjects } from '../fake_objects.js';

/** A runtime manager over a real runtime, as each suite's beforeAll builds it. */
export interface RealRuntimeEnv {
  manager: KubeGenericRuntimeManager;
  /** A fresh manager over the same runtime (agent restart), optionally with other options. */
  newManager(extra?: Partial<RuntimeManagerOptions>): Promise<KubeGenericRuntimeManager>;
  /** busybox as this runtime names it, and another name for the same image (a spec change). */
  busybox: string;
  busyboxAlias: string;
  /** The agent-side podsDir (emptyDir volumes live there). */
  podsDir: string;
  podIpPattern: RegExp;
  clock: SkewClock;
  backoff: Backoff;
}

/** A pod IP from the nodes' pod network (testkit's POD_SUBNET, a /16), whichever their runtime. */
export const POD_IP_PATTERN = new RegExp(
  `^${POD_SUBNET.replace(/\.0\.0\/16$/, '').replaceAll('.', '\\.')}\\.`,
);

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

/** Registers the sync scenarios; `env()` returns what beforeAll built. */
export function syncScenarios(env: () => RealRuntimeEnv): void {
  let e: RealRuntimeEnv;
  const t = (name: string, fn: () => Promise<void>) =>
    it(name, async () => {
      e = env();
      await fn();
    }, 120_000);
  t('runs init containers in order, then the app, with labels a restarted agent can read', async () => {
    const p = pod('init', [sh(e.busybox, 'app', 'sleep 3600')], {
      initContainers: [sh(e.busybox, 'init1', 'echo one'), sh(e.busybox, 'init2', 'echo two')],
    });
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    await waitFor(e.manager, p, (s) => state(s, 'init1')?.state === 'exited', 'init1 to finish');
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    await waitFor(e.manager, p, (s) => state(s, 'init2')?.state === 'exited', 'init2 to finish');
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    const s = await waitFor(e.manager, p, (x) => state(x, 'app')?.state === 'running', 'app to run');
    expect(s.ips[0]).toMatch(e.podIpPattern);
    expect(state(s, 'init1')).toMatchObject({ exitCode: 0, restartCount: 0 });

    // A new manager adopts the pod: same view, and a sync changes nothing.
    const fresh = await e.newManager();
    const again = await status(fresh, p);
    expect(again.containerStatuses.map((c) => [c.name, c.state, c.hash])).toEqual(
      s.containerStatuses.map((c) => [c.name, c.state, c.hash]),
    );
    const r = await fresh.syncPod(p, again, [], e.backoff);
    expect(r.steps).toEqual([]);
  });

  t('restarts a crashing container with CrashLoopBackOff delays', async () => {
    const p = pod('crash', [sh(e.busybox, 'app', 'exit 3')]);
    await sync(e.manager, p, e.backoff);
    await waitFor(e.manager, p, (s) => state(s, 'app')?.state === 'exited', 'first exit');
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    await waitFor(
      e.manager,
      p,
      (s) => state(s, 'app')?.restartCount === 1 && state(s, 'app')?.state === 'exited',
      'second exit',
    );
    const r = await sync(e.manager, p, e.backoff);
    expect(failures(r)).toEqual([
      expect.stringMatching(
        /^StartContainer app: CrashLoopBackOff: back-off 10s restarting failed container=app/,
      ),
    ]);
    e.clock.skewMs += 10_000;
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    const s = await waitFor(e.manager, p, (x) => state(x, 'app')?.restartCount === 2, 'third instance');
    expect(state(s, 'app')!.exitCode ?? 3).toBe(3);
  });

  t('reads termination messages from the mounted file and from logs', async () => {
    const p = pod(
      'tm',
      [
        sh(e.busybox, 'file', 'echo -n "disk on fire" > /dev/termination-log; exit 1'),
        sh(e.busybox, 'logs', 'echo "stack trace line" >&2; exit 2', {
          terminationMessagePolicy: 'FallbackToLogsOnError',
        }),
      ],
      { restartPolicy: 'Never' },
    );
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]);
    const s = await waitFor(
      e.manager,
      p,
      (x) => state(x, 'file')?.state === 'exited' && state(x, 'logs')?.state === 'exited',
      'both to exit',
    );
    expect(state(s, 'file')).toMatchObject({ exitCode: 1, message: 'disk on fire' });
    expect(state(s, 'logs')).toMatchObject({ exitCode: 2, message: 'stack trace line\n' });
  });

  t('restarts on a spec change and kills with preStop and the grace period', async () => {
    const p = pod(
      'upd',
      [
        sh(e.busybox, 'app', 'trap "exit 0" TERM; while true; do sleep 1; done', {
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye >> /scratch/prestop'] } } },
        }),
      ],
      { volumes: [{ name: 'scratch', emptyDir: {} }] },
    );
    await sync(e.manager, p, e.backoff);
    const first = await waitFor(e.manager, p, (s) => state(s, 'app')?.state === 'running', 'app to run');
    // Same image under another name: a different hash, so the container is replaced.
    p.spec!.containers[0]!.image = e.busyboxAlias;
    const r = await sync(e.manager, p, e.backoff);
    expect(r.steps.map((x) => `${x.action} ${x.target}`)).toEqual([
      'KillContainer app',
      'StartContainer app',
    ]);
    expect(failures(r)).toEqual([]);
    const s = await waitFor(
      e.manager,
      p,
      (x) => state(x, 'app')?.restartCount === 1 && state(x, 'app')?.state === 'running',
      'new app',
    );
    expect(s.containerStatuses.find((c) => c.id.id === first.containerStatuses[0]!.id.id)).toMatchObject({
      state: 'exited',
      exitCode: 0,
    });
    // The emptyDir lives in the agent's pods dir, which the runtime shares: preStop ran once.
    const scratch = join(e.podsDir, p.metadata!.uid!, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    expect(await readFile(join(scratch, 'prestop'), 'utf8')).toBe('bye\n');
  });

  t('reports image errors with the kubelet reasons', async () => {
    const p = pod('img', [
      { name: 'never', image: '127.0.0.1:1/kh/nothing:1', imagePullPolicy: 'Never' },
      { name: 'pull', image: '127.0.0.1:1/kh/nothing:1', imagePullPolicy: 'IfNotPresent' },
    ]);
    const r = await sync(e.manager, p, e.backoff);
    expect(r.steps.find((x) => x.target === 'never')?.reason).toBe('ErrImageNeverPull');
    expect(r.steps.find((x) => x.target === 'pull')?.reason).toBe('ErrImagePull');
    const r2 = await sync(e.manager, p, e.backoff);
    expect(r2.steps.find((x) => x.target === 'pull')?.reason).toBe('ImagePullBackOff');
  });

  t('garbage-collects the containers, sandbox and logs of a deleted pod', async () => {
    const p = pod('gc', [sh(e.busybox, 'app', 'echo done')], { restartPolicy: 'Never' });
    await sync(e.manager, p, e.backoff);
    const s = await waitFor(e.manager, p, (x) => state(x, 'app')?.state === 'exited', 'exit');
    const logPath = state(s, 'app')!.logPath!;
    expect(await readFile(logPath, 'utf8')).toMatch(/ stdout F done\n$/);
    expect(failures(await sync(e.manager, p, e.backoff))).toEqual([]); // finished: sandbox stopped

    const uid = p.metadata!.uid!;
    const m = await e.newManager({
      podStateProvider: {
        shouldPodContentBeRemoved: (u) => u === uid,
        shouldPodRuntimeBeRemoved: (u) => u === uid,
      },
    });
    const report = await m.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
      true,
      false,
    );
    expect(report.errors).toEqual([]);
    expect(report.removedContainers).toEqual([state(s, 'app')!.id.id]);
    expect(report.removedSandboxes).toEqual([s.sandboxStatuses[0]!.id]);
    expect(report.removedLogDirs).toEqual([`it_${p.metadata!.name}_${uid}`]);
    const after = await status(e.manager, p);
    expect([after.sandboxStatuses.length, after.containerStatuses.length]).toEqual([0, 0]);
    await expect(stat(logPath)).rejects.toThrow(/ENOENT/);
  });

  t(
    'projects a config map volume and envFrom vars that the process sees, and updates the file in place',
    async () => {
      const objects = new FakeObjects().configMap('web-cfg', {
        GREETING: 'hello',
        'index.html': '<p>v1</p>',
      });
      const script =
        'echo "env: $GREETING"; echo "file: $(cat /www/index.html)"; touch /www/x 2>/dev/null && echo rw || echo ro; sleep 3600';
      const p = pod(
        'cfg',
        [
          sh(e.busybox, 'app', script, {
            envFrom: [{ configMapRef: { name: 'web-cfg' } }],
            volumeMounts: [{ name: 'www', mountPath: '/www' }],
          }),
        ],
        {
          volumes: [{ name: 'www', configMap: { name: 'web-cfg' } }],
        },
      );
      const helper = new DefaultRuntimeHelper(
        e.podsDir,
        e.manager.context.helper.podCgroupParent(p),
        objects,
      );
      const m = await e.newManager({ runtimeHelper: helper });
      expect(failures(await sync(m, p, e.backoff))).toEqual([]);
      const s = await waitFor(m, p, (x) => state(x, 'app')?.state === 'running', 'app to run');
      const logPath = state(s, 'app')!.logPath!;
      const deadline = Date.now() + 20_000;
      let log = '';
      while (!log.includes(' ro\n') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        log = await readFile(logPath, 'utf8').catch(() => '');
      }
      expect(log.split('\n').map((l) => l.replace(/^\S+ stdout F /, ''))).toEqual(
        expect.arrayContaining(['env: hello', 'file: <p>v1</p>', 'ro']),
      );
      // An update reaches the running container through the ..data swap, as the agent's refresh does it.
      objects.configMap('web-cfg', { GREETING: 'hello', 'index.html': '<p>v2</p>' });
      expect(await helper.volumes.refresh(p)).toEqual({ updated: ['www'], errors: [] });
      const r = await m.runInContainer(state(s, 'app')!.id, ['cat', '/www/index.html'], 10_000);
      expect([r.exitCode, r.stdout.toString()]).toEqual([0, '<p>v2</p>']);
    },
  );
}
