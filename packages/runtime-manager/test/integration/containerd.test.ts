// The sync scenarios against real containerd (CRI v1) in a testkit node container.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExponentialBackoff } from '../../src/backoff.js';
import { type ContainerdNode, startContainerdNode } from '../../src/bench/containerd_node.js';
import { failures, killAll, pod, SkewClock, sh, state, status, sync, waitFor } from './scenarios.js';

const enabled = process.env.KH_SKIP_INTEGRATION !== '1';

describe.skipIf(!enabled)('runtime manager on real containerd', () => {
  let n: ContainerdNode;
  const clock = new SkewClock();
  const backoff = new ExponentialBackoff({ initialMs: 10_000, maxMs: 300_000, clock });

  beforeAll(async () => {
    n = await startContainerdNode({ manager: { clock }, progress: (l) => console.log(l) });
  }, 300_000);
  afterAll(async () => {
    if (!n) return;
    await killAll(n.manager).catch(() => undefined);
    await n.stop();
  }, 120_000);

  it('runs init containers in order, then the app, with labels a restarted agent can read', async () => {
    const p = pod('init', [sh(n.busybox, 'app', 'sleep 3600')], {
      initContainers: [sh(n.busybox, 'init1', 'echo one'), sh(n.busybox, 'init2', 'echo two')],
    });
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    await waitFor(n.manager, p, (s) => state(s, 'init1')?.state === 'exited', 'init1 to finish');
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    await waitFor(n.manager, p, (s) => state(s, 'init2')?.state === 'exited', 'init2 to finish');
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    const s = await waitFor(n.manager, p, (x) => state(x, 'app')?.state === 'running', 'app to run');
    expect(s.ips[0]).toMatch(/^10\.88\./);
    expect(state(s, 'init1')).toMatchObject({ exitCode: 0, restartCount: 0 });

    // A new manager adopts the pod: same view, and a sync changes nothing.
    const fresh = await n.newManager();
    const again = await status(fresh, p);
    expect(again.containerStatuses.map((c) => [c.name, c.state, c.hash])).toEqual(
      s.containerStatuses.map((c) => [c.name, c.state, c.hash]),
    );
    const r = await fresh.syncPod(p, again, [], backoff);
    expect(r.steps).toEqual([]);
  }, 120_000);

  it('restarts a crashing container with CrashLoopBackOff delays', async () => {
    const p = pod('crash', [sh(n.busybox, 'app', 'exit 3')]);
    await sync(n.manager, p, backoff);
    await waitFor(n.manager, p, (s) => state(s, 'app')?.state === 'exited', 'first exit');
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    await waitFor(
      n.manager,
      p,
      (s) => state(s, 'app')?.restartCount === 1 && state(s, 'app')?.state === 'exited',
      'second exit',
    );
    const r = await sync(n.manager, p, backoff);
    expect(failures(r)).toEqual([
      expect.stringMatching(
        /^StartContainer app: CrashLoopBackOff: back-off 10s restarting failed container=app/,
      ),
    ]);
    clock.skewMs += 10_000;
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    const s = await waitFor(n.manager, p, (x) => state(x, 'app')?.restartCount === 2, 'third instance');
    expect(state(s, 'app')!.exitCode ?? 3).toBe(3);
  }, 120_000);

  it('reads termination messages from the mounted file and from logs', async () => {
    const p = pod(
      'tm',
      [
        sh(n.busybox, 'file', 'echo -n "disk on fire" > /dev/termination-log; exit 1'),
        sh(n.busybox, 'logs', 'echo "stack trace line" >&2; exit 2', {
          terminationMessagePolicy: 'FallbackToLogsOnError',
        }),
      ],
      { restartPolicy: 'Never' },
    );
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]);
    const s = await waitFor(
      n.manager,
      p,
      (x) => state(x, 'file')?.state === 'exited' && state(x, 'logs')?.state === 'exited',
      'both to exit',
    );
    expect(state(s, 'file')).toMatchObject({ exitCode: 1, message: 'disk on fire' });
    expect(state(s, 'logs')).toMatchObject({ exitCode: 2, message: 'stack trace line\n' });
  }, 120_000);

  it('restarts on a spec change and kills with preStop and the grace period', async () => {
    const p = pod(
      'upd',
      [
        sh(n.busybox, 'app', 'trap "exit 0" TERM; while true; do sleep 1; done', {
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye >> /scratch/prestop'] } } },
        }),
      ],
      { volumes: [{ name: 'scratch', emptyDir: {} }] },
    );
    await sync(n.manager, p, backoff);
    const first = await waitFor(n.manager, p, (s) => state(s, 'app')?.state === 'running', 'app to run');
    // Same image under another name: a different hash, so the container is replaced.
    p.spec!.containers[0]!.image = n.busybox.replace(/^docker\.io\//, '');
    const r = await sync(n.manager, p, backoff);
    expect(r.steps.map((x) => `${x.action} ${x.target}`)).toEqual([
      'KillContainer app',
      'StartContainer app',
    ]);
    expect(failures(r)).toEqual([]);
    const s = await waitFor(
      n.manager,
      p,
      (x) => state(x, 'app')?.restartCount === 1 && state(x, 'app')?.state === 'running',
      'new app',
    );
    expect(s.containerStatuses.find((c) => c.id.id === first.containerStatuses[0]!.id.id)).toMatchObject({
      state: 'exited',
      exitCode: 0,
    });
    // The emptyDir lives in the agent's pods dir, which the node shares: preStop ran once.
    const scratch = join(
      n.node.sharedDirOnHost,
      'pods',
      p.metadata!.uid!,
      'volumes',
      'kubernetes.io~empty-dir',
      'scratch',
    );
    expect(await readFile(join(scratch, 'prestop'), 'utf8')).toBe('bye\n');
  }, 120_000);

  it('reports image errors with the kubelet reasons', async () => {
    const p = pod('img', [
      { name: 'never', image: 'kh.invalid/nothing:1', imagePullPolicy: 'Never' },
      { name: 'pull', image: 'kh.invalid/nothing:1', imagePullPolicy: 'IfNotPresent' },
    ]);
    const r = await sync(n.manager, p, backoff);
    expect(r.steps.find((x) => x.target === 'never')?.reason).toBe('ErrImageNeverPull');
    expect(r.steps.find((x) => x.target === 'pull')?.reason).toBe('ErrImagePull');
    const r2 = await sync(n.manager, p, backoff);
    expect(r2.steps.find((x) => x.target === 'pull')?.reason).toBe('ImagePullBackOff');
  }, 120_000);

  it('garbage-collects the containers, sandbox and logs of a deleted pod', async () => {
    const p = pod('gc', [sh(n.busybox, 'app', 'echo done')], { restartPolicy: 'Never' });
    await sync(n.manager, p, backoff);
    const s = await waitFor(n.manager, p, (x) => state(x, 'app')?.state === 'exited', 'exit');
    const logPath = state(s, 'app')!.logPath!;
    expect(await readFile(logPath, 'utf8')).toMatch(/ stdout F done\n$/);
    expect(failures(await sync(n.manager, p, backoff))).toEqual([]); // finished: sandbox stopped

    const uid = p.metadata!.uid!;
    const m = await n.newManager({
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
    const after = await status(n.manager, p);
    expect([after.sandboxStatuses.length, after.containerStatuses.length]).toEqual([0, 0]);
    await expect(stat(logPath)).rejects.toThrow(/ENOENT/);
  }, 120_000);
});
