import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { CreateContainerRequest, RunPodSandboxRequest, StopContainerRequest } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import type { PodSyncResult } from '../../src/container/runtime.js';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

const failures = (r: PodSyncResult) =>
  r.steps.filter((s) => s.error).map((s) => `${s.action} ${s.target}: ${s.reason}`);

describe('syncPod over the fake runtime', () => {
  it('creates the sandbox, then the containers, with kubelet labels, annotations and log paths', async () => {
    const pod = makePod('web', [ctr('app'), ctr('side')]);
    const r = await h.sync(pod);
    expect(failures(r)).toEqual([]);
    expect(r.steps.map((s) => s.action)).toEqual(['CreatePodSandbox', 'StartContainer', 'StartContainer']);

    const [run] = h.requests<RunPodSandboxRequest>('RunPodSandbox');
    expect(run!.config!.metadata).toMatchObject({ name: 'web', namespace: 'default', attempt: 0 });
    expect(run!.config!.logDirectory).toBe(join(h.logsDir, `default_web_${pod.metadata!.uid}`));
    expect(run!.config!.labels['io.kubernetes.pod.uid']).toBe(pod.metadata!.uid);

    const creates = h.requests<CreateContainerRequest>('CreateContainer');
    expect(creates.map((c) => c.config!.metadata!.name)).toEqual(['app', 'side']);
    const app = creates[0]!.config!;
    expect(app.labels).toEqual({
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': pod.metadata!.uid,
      'io.kubernetes.container.name': 'app',
    });
    expect(app.annotations).toMatchObject({
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '30',
    });
    expect(app.logPath).toBe('app/0.log');
    // The kubelet's order: the pod's managed /etc/hosts (it has an IP), then the termination log.
    expect(app.mounts.map((m) => m.containerPath)).toEqual(['/etc/hosts', '/dev/termination-log']);
    expect(app.mounts[0]!.hostPath).toBe(join(h.podsDir, pod.metadata!.uid!, 'etc-hosts'));
    expect(app.mounts[1]!.hostPath.startsWith(join(h.podsDir, pod.metadata!.uid!, 'containers', 'app'))).toBe(
      true,
    );

    const st = await h.status(pod);
    expect(st.containerStatuses.map((c) => [c.name, c.state]).sort()).toEqual([
      ['app', 'running'],
      ['side', 'running'],
    ]);
    expect(st.ips).toHaveLength(1);
    expect(st.containerStatuses[0]!.id.type).toBe('fake-cri');
    expect(h.events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Pulled', 'Created', 'Started']));
  });

  it('does nothing to a pod that already matches its spec', async () => {
    const pod = makePod('steady', [ctr('app')]);
    await h.sync(pod);
    const mark = h.fake.calls.length;
    const r = await h.sync(pod);
    expect(r.steps).toEqual([]);
    const mutating = h.callsSince(mark).filter((m) => !/^(List|.*Status$|Version)/.test(m));
    expect(mutating).toEqual([]);
  });

  it('re-creates a dead sandbox with the next attempt and restarts containers in it', async () => {
    const pod = makePod('sb', [ctr('app')]);
    await h.sync(pod);
    const first = (await h.status(pod)).sandboxStatuses[0]!;
    await h.manager.context.cri.stopPodSandbox({ podSandboxId: first.id });
    const r = await h.sync(pod);
    expect(failures(r)).toEqual([]);
    expect(r.steps.map((s) => s.action)).toEqual(['KillPodSandbox', 'CreatePodSandbox', 'StartContainer']);
    const st = await h.status(pod);
    expect(st.sandboxStatuses[0]).toMatchObject({ state: 'ready', attempt: 1 });
    expect(st.containerStatuses[0]).toMatchObject({ name: 'app', state: 'running', restartCount: 1 });
    expect(h.events.some((e) => e.reason === 'SandboxChanged')).toBe(true);
  });

  it('fails getPodStatus on a transient status error instead of hiding a container', async () => {
    const { UnavailableError } = await import('@kh/cri-api');
    const pod = makePod('flaky', [ctr('app')]);
    await h.sync(pod);
    h.fake.failNext('ContainerStatus', new UnavailableError('runtime busy'));
    await expect(h.status(pod)).rejects.toThrow(/runtime busy/);
    h.fake.failNext('PodSandboxStatus', new UnavailableError('runtime busy'));
    await expect(h.status(pod)).rejects.toThrow(/runtime busy/);
    expect((await h.status(pod)).containerStatuses).toHaveLength(1);
  });

  it('fails the sandbox step with CreatePodSandboxError and a clear message', async () => {
    const { UnavailableError } = await import('@kh/cri-api');
    h.fake.failNext('RunPodSandbox', new UnavailableError('network plugin not ready'));
    const pod = makePod('nosb', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps).toHaveLength(1);
    expect(r.steps[0]).toMatchObject({ action: 'CreatePodSandbox', reason: 'CreatePodSandboxError' });
    expect(r.steps[0]!.message).toMatch(/^Failed to create pod sandbox: .*network plugin not ready/);
    expect(h.events.find((e) => e.reason === 'FailedCreatePodSandBox')).toBeDefined();
    expect(h.fake.containers()).toEqual([]);
  });
});

describe('restart policies and CrashLoopBackOff', () => {
  it('backs off 10s, 20s, 40s between restarts of a crashing container', async () => {
    h.fake.script.containerExit('app', { afterMs: 0, exitCode: 1 });
    const pod = makePod('crash', [ctr('app')]);
    await h.sync(pod); // starts, exits at once
    const r1 = await h.sync(pod); // first restart: no delay yet, backoff now 10s
    expect(failures(r1)).toEqual([]);
    expect((await h.status(pod)).containerStatuses[0]).toMatchObject({
      state: 'exited',
      restartCount: 1,
      exitCode: 1,
    });

    const r2 = await h.sync(pod);
    expect(r2.steps).toEqual([
      expect.objectContaining({ action: 'StartContainer', target: 'app', reason: 'CrashLoopBackOff' }),
    ]);
    expect(r2.steps[0]!.message).toBe(
      `back-off 10s restarting failed container=app pod=crash_default(${pod.metadata!.uid})`,
    );
    h.advance(9_999);
    expect(failures(await h.sync(pod))).toEqual(['StartContainer app: CrashLoopBackOff']);
    h.advance(1);
    expect(failures(await h.sync(pod))).toEqual([]);
    expect((await h.status(pod)).containerStatuses[0]!.restartCount).toBe(2);

    h.advance(19_999);
    expect((await h.sync(pod)).steps[0]!.message).toMatch(/^back-off 20s /);
    h.advance(1);
    expect(failures(await h.sync(pod))).toEqual([]);
    h.advance(39_999);
    expect((await h.sync(pod)).steps[0]!.message).toMatch(/^back-off 40s /);
    expect(h.events.filter((e) => e.reason === 'BackOff').length).toBeGreaterThan(0);
  });

  it('resets the backoff after a container ran for 10 minutes', async () => {
    const pod = makePod('long', [ctr('app')]);
    h.fake.script.containerExit('app', { afterMs: 0, exitCode: 1 });
    await h.sync(pod);
    await h.sync(pod); // restart 1, delay 10s recorded
    h.advance(10_000);
    // The next instance runs 10 min + 1 ms before it crashes.
    h.fake.script.containerExit('app', { afterMs: 600_001, exitCode: 1 });
    await h.sync(pod);
    h.advance(600_001);
    const r = await h.sync(pod);
    expect(failures(r)).toEqual([]);
    expect(
      h.backoff.get(
        `long_default_${pod.metadata!.uid}_app_${(await h.status(pod)).containerStatuses[0]!.hash}`,
      ),
    ).toBe(10_000);
  });

  it.each([
    ['Always', 0, 2],
    ['OnFailure', 0, 1],
    ['OnFailure', 3, 2],
    ['Never', 3, 1],
  ])(
    'restartPolicy %s with exit code %i -> %i container instance(s)',
    async (policy, exitCode, instances) => {
      h.fake.script.containerExit('app', { afterMs: 0, exitCode });
      const pod = makePod(`rp-${policy.toLowerCase()}-${exitCode}`, [ctr('app')], { restartPolicy: policy });
      await h.sync(pod);
      const r = await h.sync(pod);
      expect(failures(r)).toEqual([]);
      expect(h.fake.containers()).toHaveLength(instances);
      if (instances === 1) {
        // Finished pods are torn down: the sandbox is stopped.
        expect(r.steps.map((s) => s.action)).toContain('KillPodSandbox');
        expect((await h.status(pod)).sandboxStatuses[0]!.state).toBe('notready');
        // and not re-created afterwards.
        const again = await h.sync(pod);
        expect(again.steps.map((s) => s.action)).not.toContain('CreatePodSandbox');
      }
    },
  );

  it('a changed spec starts without the backoff of the crashing old spec', async () => {
    h.fake.addImage('kubelet-harness/busybox:fixed', 1000);
    h.fake.script.containerExit('app', { afterMs: 0, exitCode: 1 });
    const pod = makePod('fix', [ctr('app')]);
    await h.sync(pod);
    await h.sync(pod);
    expect(failures(await h.sync(pod))).toEqual(['StartContainer app: CrashLoopBackOff']);
    pod.spec!.containers[0]!.image = 'kubelet-harness/busybox:fixed';
    expect(failures(await h.sync(pod))).toEqual([]);
  });

  it('restarts a running container when its spec hash changes', async () => {
    h.fake.addImage('kubelet-harness/busybox:2', 1000);
    const pod = makePod('upd', [ctr('app')]);
    await h.sync(pod);
    const before = (await h.status(pod)).containerStatuses[0]!;
    pod.spec!.containers[0]!.image = 'kubelet-harness/busybox:2';
    const r = await h.sync(pod);
    expect(r.steps.map((s) => `${s.action} ${s.target}`)).toEqual([
      'KillContainer app',
      'StartContainer app',
    ]);
    const after = (await h.status(pod)).containerStatuses;
    expect(after[0]).toMatchObject({ state: 'running', restartCount: 1, image: 'kubelet-harness/busybox:2' });
    expect(after.find((c) => c.id.id === before.id.id)?.state).toBe('exited');
    expect(h.events.find((e) => e.reason === 'Killing')?.message).toBe(
      'Container app definition changed, will be restarted',
    );
  });

  it('counts restarts from the log directory when no dead container survives', async () => {
    const pod = makePod('logs', [ctr('app')]);
    const dir = join(h.logsDir, `default_logs_${pod.metadata!.uid}`, 'app');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, '4.log'), '');
    await h.sync(pod);
    expect((await h.status(pod)).containerStatuses[0]!.restartCount).toBe(5);
  });
});

describe('init containers', () => {
  it('runs them one at a time, in order, before the app containers', async () => {
    h.fake.script.containerExit('init1', { afterMs: 1000, exitCode: 0 });
    h.fake.script.containerExit('init2', { afterMs: 1000, exitCode: 0 });
    const pod = makePod('init', [ctr('app')], { initContainers: [ctr('init1'), ctr('init2')] });
    const started: string[] = [];
    const step = async () => {
      const r = await h.sync(pod);
      started.push(...r.steps.filter((s) => !s.error && /Container$/.test(s.action)).map((s) => s.target));
    };
    await step(); // sandbox + init1
    await step(); // init1 still running: nothing
    h.advance(1000);
    await step(); // init2
    expect(started).toEqual(['init1', 'init2']);
    h.advance(1000);
    await step();
    expect(started).toEqual(['init1', 'init2', 'app']);
  });

  it('retries a failed init container, or fails the pod under restartPolicy Never', async () => {
    h.fake.script.containerExit('init1', { afterMs: 0, exitCode: 2 });
    const retry = makePod('init-retry', [ctr('app')], {
      initContainers: [ctr('init1')],
      restartPolicy: 'OnFailure',
    });
    await h.sync(retry);
    const r = await h.sync(retry);
    expect(r.steps.map((s) => `${s.action} ${s.target}`)).toEqual(['InitContainer init1']);
    expect((await h.status(retry)).containerStatuses[0]).toMatchObject({ name: 'init1', restartCount: 1 });

    const never = makePod('init-never', [ctr('app')], {
      initContainers: [ctr('init1')],
      restartPolicy: 'Never',
    });
    await h.sync(never);
    const r2 = await h.sync(never);
    expect(r2.steps.map((s) => s.action)).toEqual(['KillPodSandbox']);
    expect((await h.status(never)).containerStatuses.map((c) => c.name)).toEqual(['init1']);
  });

  it('stops sidecars only after the app containers', async () => {
    const pod = makePod('sidecar-stop', [ctr('app')], {
      initContainers: [ctr('proxy', { restartPolicy: 'Always' })],
    });
    await h.sync(pod);
    await h.sync(pod);
    const st = await h.status(pod);
    const idOf = (n: string) => st.containerStatuses.find((c) => c.name === n)!.id.id;
    await h.manager.killPod(pod, (await h.manager.getPods(false)).find((p) => p.uid === pod.metadata!.uid)!);
    const stops = h.requests<StopContainerRequest>('StopContainer').map((r) => r.containerId);
    expect(stops).toEqual([idOf('app'), idOf('proxy')]);
  });

  it('keeps a sidecar (restartable init container) running next to the app', async () => {
    const pod = makePod('sidecar', [ctr('app')], {
      initContainers: [ctr('proxy', { restartPolicy: 'Always' }), ctr('setup')],
    });
    h.fake.script.containerExit('setup', { afterMs: 0, exitCode: 0 });
    await h.sync(pod); // proxy
    await h.sync(pod); // setup (exits 0)
    await h.sync(pod); // app
    const st = await h.status(pod);
    const state = (n: string) => st.containerStatuses.find((c) => c.name === n)?.state;
    expect([state('proxy'), state('setup'), state('app')]).toEqual(['running', 'exited', 'running']);
  });
});

describe('hooks, grace periods and termination messages', () => {
  it('kills the container with a clear reason when postStart fails', async () => {
    h.fake.script.execResult('hook fail', { exitCode: 3, stderr: 'nope' });
    const pod = makePod('poststart', [
      ctr('app', { lifecycle: { postStart: { exec: { command: ['hook', 'fail'] } } } }),
    ]);
    const r = await h.sync(pod);
    const step = r.steps.find((s) => s.target === 'app')!;
    expect(step.reason).toBe('PostStartHookError');
    expect(step.message).toMatch(
      /PostStartHook failed: Exec lifecycle hook \(\["hook","fail"\]\) .* exit code 3/,
    );
    expect(h.events.find((e) => e.reason === 'FailedPostStartHook')).toBeDefined();
    expect((await h.status(pod)).containerStatuses[0]!.state).toBe('exited');
  });

  it('runs preStop, then stops with the pod grace period, an override, and at least 2s', async () => {
    const pod = makePod(
      'prestop',
      [ctr('app', { lifecycle: { preStop: { exec: { command: ['drain'] } } } })],
      { terminationGracePeriodSeconds: 45 },
    );
    await h.sync(pod);
    const running = (await h.manager.getPods(false)).find((p) => p.uid === pod.metadata!.uid)!;
    await h.manager.killPod(pod, running);
    expect(h.requests<{ cmd: string[] }>('ExecSync').map((e) => e.cmd)).toEqual([['drain']]);
    expect(Number(h.requests<StopContainerRequest>('StopContainer').at(-1)!.timeout)).toBe(45);

    const p2 = makePod('override', [ctr('app')]);
    await h.sync(p2);
    await h.manager.killPod(p2, (await h.manager.getPods(false)).find((p) => p.uid === p2.metadata!.uid)!, 0);
    expect(Number(h.requests<StopContainerRequest>('StopContainer').at(-1)!.timeout)).toBe(2);
    expect(h.fake.sandboxes().every((s) => s.state === 1)).toBe(true);
  });

  it("kills a container that failed its liveness or startup probe with the probe's grace period", async () => {
    const failed = new Set<string>();
    h.manager = await h.newManager({
      probeResults: {
        liveness: (id) => (failed.has(`liveness/${id}`) ? 'failure' : undefined),
        startup: (id) => (failed.has(`startup/${id}`) ? 'failure' : undefined),
      },
    });
    const probe = { exec: { command: ['true'] } };
    const pod = makePod(
      'probegrace',
      [
        ctr('live', { livenessProbe: { ...probe, terminationGracePeriodSeconds: 7 } }),
        ctr('start', { startupProbe: { ...probe, terminationGracePeriodSeconds: 9 } }),
        ctr('plain', { livenessProbe: probe }),
      ],
      { terminationGracePeriodSeconds: 45 },
    );
    await h.sync(pod);
    const ids = Object.fromEntries((await h.status(pod)).containerStatuses.map((c) => [c.name, c.id.id]));
    failed.add(`liveness/${ids.live}`).add(`startup/${ids.start}`).add(`liveness/${ids.plain}`);
    await h.sync(pod);
    const stops = h.requests<StopContainerRequest>('StopContainer');
    const timeoutOf = (name: string) => Number(stops.find((s) => s.containerId === ids[name])?.timeout);
    expect([timeoutOf('live'), timeoutOf('start'), timeoutOf('plain')]).toEqual([7, 9, 45]);

    // A pod being deleted is killed with the deletion's grace period, whatever the probe says.
    const deleting = makePod('probegrace-deleting', [
      ctr('live', { livenessProbe: { ...probe, terminationGracePeriodSeconds: 7 } }),
    ]);
    await h.sync(deleting);
    const id = (await h.status(deleting)).containerStatuses[0]!.id.id;
    failed.add(`liveness/${id}`);
    await h.sync({ ...deleting, metadata: { ...deleting.metadata, deletionGracePeriodSeconds: 3 } });
    const stop = h.requests<StopContainerRequest>('StopContainer').find((s) => s.containerId === id);
    expect(Number(stop?.timeout)).toBe(3);
  });

  it('reads the termination message from the file mounted at terminationMessagePath', async () => {
    h.fake.script.containerExit('app', { afterMs: 5, exitCode: 1 });
    const pod = makePod('tm', [ctr('app')], { restartPolicy: 'Never' });
    await h.sync(pod);
    const mount = h
      .requests<CreateContainerRequest>('CreateContainer')[0]!
      .config!.mounts.find((m) => m.containerPath === '/dev/termination-log')!;
    await writeFile(mount.hostPath, 'disk full');
    h.advance(5);
    expect((await h.status(pod)).containerStatuses[0]).toMatchObject({ exitCode: 1, message: 'disk full' });
  });

  it('falls back to the log tail with FallbackToLogsOnError', async () => {
    h.fake.script.containerExit('app', { afterMs: 0, exitCode: 1 });
    const pod = makePod('tmlog', [ctr('app', { terminationMessagePolicy: 'FallbackToLogsOnError' })], {
      restartPolicy: 'Never',
    });
    await h.sync(pod);
    const st = (await h.status(pod)).containerStatuses[0]!;
    await mkdir(dirname(st.logPath!), { recursive: true });
    await writeFile(st.logPath!, '2026-01-01T00:00:00Z stderr F fatal: config missing\n');
    expect((await h.status(pod)).containerStatuses[0]!.message).toBe('fatal: config missing\n');
    expect(await readFile(st.logPath!, 'utf8')).toContain('fatal');
  });
});

describe('path mapping for an agent outside the runtime host', () => {
  it('tells the runtime its own paths for agent files and maps reported paths back', async () => {
    const m = await h.newManager({ pathMapping: { agentRoot: h.dir, runtimeRoot: '/run/kh' } });
    h.manager = m;
    const pod = makePod('mapped', [ctr('app', { volumeMounts: [{ name: 'host', mountPath: '/host' }] })], {
      volumes: [{ name: 'host', hostPath: { path: '/srv/data' } }],
    });
    expect(failures(await h.sync(pod))).toEqual([]);
    const [run] = h.requests<RunPodSandboxRequest>('RunPodSandbox');
    expect(run!.config!.logDirectory).toBe(`/run/kh/logs/default_mapped_${pod.metadata!.uid}`);
    const mounts = h.requests<CreateContainerRequest>('CreateContainer')[0]!.config!.mounts;
    expect(mounts.find((x) => x.containerPath === '/host')!.hostPath).toBe('/srv/data');
    expect(mounts.find((x) => x.containerPath === '/dev/termination-log')!.hostPath).toMatch(
      /^\/run\/kh\/pods\//,
    );
    const st = (await h.status(pod)).containerStatuses[0]!;
    expect(st.logPath).toBe(join(h.logsDir, `default_mapped_${pod.metadata!.uid}`, 'app', '0.log'));
  });
});
