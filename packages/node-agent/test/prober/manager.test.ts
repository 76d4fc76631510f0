import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeClock } from '@kh/apimachinery';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import type { ProbeOutcome } from '../../src/prober/handlers.js';
import { ProberManager, type ProberManagerDeps } from '../../src/prober/manager.js';
import type { ResultUpdate } from '../../src/prober/results.js';
import type { ProbeRequest } from '../../src/prober/worker.js';

const START = Date.UTC(2026, 0, 1);

function makePod(container: Partial<V1Container>, extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
    spec: { containers: [{ name: 'app', image: 'httpd', ...container }], ...extra },
  };
}

function running(id: string, startedAtMs = START, podIP = '10.88.0.5'): V1PodStatus {
  return {
    phase: 'Running',
    podIP,
    containerStatuses: [
      {
        name: 'app',
        containerID: `containerd://${id}`,
        image: 'httpd',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { running: { startedAt: new Date(startedAtMs) } },
      },
    ],
  };
}

type Script = Partial<Record<string, ProbeOutcome | Error>>;

function setup(extra: Partial<ProberManagerDeps> = {}) {
  const clock = new FakeClock(START);
  const statuses = new Map<string, V1PodStatus>();
  const script: Script = {};
  const calls: string[] = [];
  const events: { reason: string; message: string }[] = [];
  const metrics = new KubeletMetrics();
  const m = new ProberManager({
    runtime: {
      runInContainer: async () => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 }),
      type: () => 'containerd',
    },
    recorder: { event: (_pod, _type, reason, message) => events.push({ reason, message }) },
    podStatus: (uid) => statuses.get(uid),
    clock,
    metrics,
    runner: async (req: ProbeRequest) => {
      calls.push(req.spec.type);
      const o = script[req.spec.type] ?? { result: 'success', output: '' };
      if (o instanceof Error) throw o;
      return o;
    },
    ...extra,
  });
  const updates: ResultUpdate[] = [];
  m.results.onUpdate((u) => updates.push(u));
  const tick = async (ms: number) => {
    await clock.advance(ms);
    await m.idle();
  };
  active.push(m);
  return { clock, statuses, script, calls, events, metrics, m, updates, tick };
}

// Every manager a test builds is stopped afterwards, so no worker outlives its test.
const active: ProberManager[] = [];
afterEach(() => {
  for (const m of active.splice(0)) m.stop();
});

describe('readiness', () => {
  it('starts not ready, turns ready after successThreshold successes, and unready after failureThreshold failures', async () => {
    const t = setup();
    const pod = makePod({
      readinessProbe: { exec: { command: ['true'] }, periodSeconds: 5, successThreshold: 2 },
    });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(pod);
    await t.tick(0);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://c1')).toBe(false);
    expect(t.calls).toEqual(['readiness']);
    await t.tick(5000);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://c1')).toBe(true);
    t.script.readiness = { result: 'failure', output: 'nope' };
    await t.tick(5000);
    await t.tick(5000);
    expect(t.m.results.readiness.get('c1')).toBe('success');
    await t.tick(5000);
    expect(t.m.results.readiness.get('c1')).toBe('failure');
    expect(t.updates.map((u) => [u.type, u.result])).toEqual([
      ['readiness', 'failure'],
      ['readiness', 'success'],
      ['readiness', 'failure'],
    ]);
    expect(t.events.filter((e) => e.reason === 'Unhealthy')).toHaveLength(3);
    expect(t.events[0]).toEqual({ reason: 'Unhealthy', message: 'Readiness probe failed: nope' });
    expect(t.updates.filter((u) => u.type !== 'readiness')).toEqual([]);
  });

  it('waits initialDelaySeconds from the container start', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1', START));
    t.m.addPod(
      makePod({
        readinessProbe: { exec: { command: ['true'] }, initialDelaySeconds: 15, periodSeconds: 10 },
      }),
    );
    await t.tick(0);
    await t.tick(10_000);
    expect(t.calls).toEqual([]);
    await t.tick(10_000);
    expect(t.calls).toEqual(['readiness']);
  });

  it('reads false while the pod terminates, without probing', async () => {
    const t = setup();
    const pod = makePod({
      readinessProbe: { exec: { command: ['true'] } },
      livenessProbe: { exec: { command: ['true'] } },
    });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(pod);
    await t.tick(0);
    expect(t.m.results.readiness.get('c1')).toBe('success');
    const terminating = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(START) } };
    t.m.stopLivenessAndStartup(terminating);
    expect(t.m.workerCount()).toBe(1);
    // A pod update carrying the deletion also reaches the workers.
    t.m.addPod(terminating);
    expect(t.m.workerCount()).toBe(1);
    t.calls.length = 0;
    await t.tick(10_000);
    expect(t.calls).toEqual([]);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://c1')).toBe(false);
  });
});

describe('liveness', () => {
  it('publishes one failure after failureThreshold failures, then waits for a new container', async () => {
    const t = setup();
    const pod = makePod(
      { livenessProbe: { httpGet: { port: 80 }, periodSeconds: 1, terminationGracePeriodSeconds: 3 } },
      { terminationGracePeriodSeconds: 60 },
    );
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(pod);
    await t.tick(0);
    expect(t.m.results.forRuntime.liveness('c1')).toBe('success');
    t.script.liveness = { result: 'failure', output: 'HTTP probe failed with statuscode: 500' };
    for (let i = 0; i < 5; i++) await t.tick(1000);
    expect(t.m.results.forRuntime.liveness('c1')).toBe('failure');
    expect(t.updates.filter((u) => u.type === 'liveness').map((u) => [u.containerId, u.result])).toEqual([
      ['c1', 'success'],
      ['c1', 'failure'],
    ]);
    // Held: no probing of the condemned container.
    expect(t.calls).toHaveLength(4);
    expect(
      t.events.filter((e) => e.message === 'Liveness probe failed: HTTP probe failed with statuscode: 500'),
    ).toHaveLength(3);

    t.script.liveness = { result: 'success', output: '' };
    t.statuses.set('uid-web', running('c2', START + 5000));
    await t.tick(1000);
    expect(t.m.results.forRuntime.liveness('c2')).toBe('success');
    expect(t.m.results.forRuntime.liveness('c1')).toBeUndefined();
    expect(t.calls).toHaveLength(5);
  });

  it('discards a probe that could not run, and counts it as unknown', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.script.liveness = new Error('rpc error: container not found');
    t.m.addPod(makePod({ livenessProbe: { exec: { command: ['x'] }, failureThreshold: 1 } }));
    await t.tick(0);
    await t.tick(10_000);
    expect(t.m.results.liveness.get('c1')).toBe('success');
    expect(t.updates.filter((u) => u.result === 'failure')).toEqual([]);
    expect(t.events[0]).toEqual({
      reason: 'Unhealthy',
      message: 'Liveness probe errored: rpc error: container not found',
    });
    const text = await t.metrics.probesRegistry.getSingleMetricAsString('prober_probe_total');
    expect(text).toContain(
      'prober_probe_total{probe_type="Liveness",container="app",pod="web",namespace="default",pod_uid="uid-web",result="unknown"} 2',
    );
  });
});

describe('startup', () => {
  it('gates liveness and readiness until it succeeds, then stops probing', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.script.startup = { result: 'failure', output: 'not yet' };
    t.m.addPod(
      makePod({
        startupProbe: { exec: { command: ['s'] }, periodSeconds: 1, failureThreshold: 30 },
        livenessProbe: { exec: { command: ['l'] }, periodSeconds: 1 },
        readinessProbe: { exec: { command: ['r'] }, periodSeconds: 1 },
      }),
    );
    await t.tick(0);
    await t.tick(1000);
    expect(t.calls).toEqual(['startup', 'startup']);
    expect(t.m.results.forStatus.started('uid-web', 'containerd://c1')).toBe(false);
    expect(t.m.results.forRuntime.startup('c1')).toBeUndefined();
    t.script.startup = { result: 'success', output: '' };
    await t.tick(1000);
    expect(t.m.results.forStatus.started('uid-web', 'containerd://c1')).toBe(true);
    t.calls.length = 0;
    await t.tick(1000);
    expect(t.calls.sort()).toEqual(['liveness', 'readiness']);
  });

  it('checks readiness as soon as the startup probe succeeds, not a readiness period later', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.script.startup = { result: 'failure', output: 'not yet' };
    t.m.addPod(
      makePod({
        startupProbe: { exec: { command: ['s'] }, periodSeconds: 5, failureThreshold: 120 },
        readinessProbe: { exec: { command: ['r'] }, periodSeconds: 30 },
      }),
    );
    await t.tick(0);
    expect(t.calls).toEqual(['startup']);
    t.script.startup = { result: 'success', output: '' };
    await t.tick(5000);
    await t.tick(0);
    expect(t.calls).toEqual(['startup', 'startup', 'readiness']);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://c1')).toBe(true);
    // The trigger does not start a second probing loop, nor move the ticker: the next readiness
    // probe is at the worker's next tick, 30 s after it started.
    t.calls.length = 0;
    await t.tick(24_000);
    expect(t.calls).toEqual([]);
    await t.tick(1000);
    expect(t.calls).toEqual(['readiness']);
  });

  it("triggers the container's readiness worker before that worker has probed any instance", async () => {
    const t = setup();
    t.script.startup = { result: 'failure', output: 'not yet' };
    t.m.addPod(
      makePod({
        startupProbe: { exec: { command: ['s'] }, periodSeconds: 5, failureThreshold: 120 },
        readinessProbe: { exec: { command: ['r'] }, periodSeconds: 30 },
      }),
    );
    await t.tick(0); // no status yet: both workers wait for their next tick
    t.statuses.set('uid-web', running('c1'));
    t.script.startup = { result: 'success', output: '' };
    await t.tick(5000);
    await t.tick(0);
    expect(t.calls).toEqual(['startup', 'readiness']);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://c1')).toBe(true);
  });

  it('kills the container when it never starts', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.script.startup = { result: 'failure', output: 'not yet' };
    t.m.addPod(
      makePod({ startupProbe: { exec: { command: ['s'] }, periodSeconds: 1, failureThreshold: 2 } }),
    );
    await t.tick(0);
    await t.tick(1000);
    expect(t.m.results.forRuntime.startup('c1')).toBe('failure');
    expect(t.updates.filter((u) => u.result === 'failure').map((u) => u.type)).toEqual(['startup']);
  });
});

describe('lifecycle', () => {
  it('stops liveness when a pod update shows the deletion, leaving readiness false', async () => {
    const t = setup();
    const pod = makePod({
      livenessProbe: { exec: { command: ['true'] } },
      readinessProbe: { exec: { command: ['true'] } },
    });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(pod);
    await t.tick(0);
    t.m.addPod({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(START) } });
    t.calls.length = 0;
    await t.tick(10_000);
    expect(t.calls).toEqual([]);
    expect(t.m.workerCount()).toBe(1);
    expect(t.m.results.readiness.get('c1')).toBe('failure');
    expect(t.m.results.liveness.get('c1')).toBeUndefined();
  });

  it('never restarts liveness once termination was requested, even for an older copy of the pod', async () => {
    const t = setup();
    const pod = makePod({
      livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 1 },
      readinessProbe: { exec: { command: ['true'] } },
    });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(pod);
    await t.tick(0);
    t.m.addPod({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(START) } });
    // A copy from before the deletion, e.g. a periodic resync read earlier, comes by afterwards.
    t.m.addPod(pod);
    t.script.liveness = { result: 'failure', output: 'gone' };
    t.calls.length = 0;
    await t.tick(10_000);
    expect(t.calls).toEqual([]);
    expect(t.m.results.readiness.get('c1')).toBe('failure');
    expect(t.m.results.liveness.get('c1')).toBeUndefined();
    expect(t.updates.filter((u) => u.type === 'liveness' && u.result === 'failure')).toEqual([]);
  });

  it('warns on a probe warning but counts it successful', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.script.readiness = { result: 'warning', output: 'Probe terminated redirects, Response body: moved' };
    t.m.addPod(makePod({ readinessProbe: { httpGet: { port: 80 } } }));
    await t.tick(0);
    expect(t.m.results.readiness.get('c1')).toBe('success');
    expect(t.events).toEqual([
      {
        reason: 'ProbeWarning',
        message: 'Readiness probe warning: Probe terminated redirects, Response body: moved',
      },
    ]);
    const text = await t.metrics.probesRegistry.getSingleMetricAsString('prober_probe_total');
    expect(text).toContain('result="successful"');
  });

  it('marks a stopped container unready, and ends the workers of a finished pod', async () => {
    const t = setup();
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(makePod({ readinessProbe: { exec: { command: ['r'] } } }));
    await t.tick(0);
    expect(t.m.results.readiness.get('c1')).toBe('success');
    const stopped = running('c1');
    const cs = stopped.containerStatuses?.[0];
    if (cs)
      cs.state = { terminated: { exitCode: 1, startedAt: new Date(START), finishedAt: new Date(START) } };
    t.statuses.set('uid-web', stopped);
    await t.tick(10_000);
    expect(t.m.results.readiness.get('c1')).toBe('failure');
    t.statuses.set('uid-web', { ...stopped, phase: 'Failed' });
    await t.tick(10_000);
    expect(t.m.results.readiness.get('c1')).toBeUndefined();
    expect(t.clock.pendingTimers()).toBe(0);
    expect(t.m.workerCount()).toBe(0);
  });

  it('probes restartable init containers (sidecars) like app containers, and no other init container', async () => {
    const t = setup();
    const status = running('c1');
    status.initContainerStatuses = [
      { ...status.containerStatuses![0]!, name: 'sidecar', containerID: 'containerd://s1' },
    ];
    t.statuses.set('uid-web', status);
    const probe = { exec: { command: ['r'] } };
    t.m.addPod(
      makePod(
        {},
        {
          initContainers: [
            { name: 'setup', image: 'busybox', readinessProbe: probe },
            { name: 'sidecar', image: 'busybox', restartPolicy: 'Always', readinessProbe: probe },
          ],
        },
      ),
    );
    await t.tick(0);
    expect(t.m.workerCount()).toBe(1);
    expect(t.m.results.forStatus.ready('uid-web', 'containerd://s1')).toBe(true);
  });

  it('does not run invalid probes and forgets pods on cleanup', async () => {
    const t = setup();
    t.m.addPod(makePod({ livenessProbe: { exec: { command: ['x'] }, successThreshold: 2 } }));
    expect(t.m.workerCount()).toBe(0);
    t.m.addPod(makePod({ readinessProbe: { exec: { command: ['x'] } } }));
    t.m.addPod(makePod({ readinessProbe: { exec: { command: ['x'] } } }));
    expect(t.m.workerCount()).toBe(1);
    t.m.cleanupPods(new Set(['other']));
    expect(t.m.workerCount()).toBe(0);
    expect(t.clock.pendingTimers()).toBe(0);
  });
});

describe('with the real handlers', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('probes the pod IP on a named port and feeds readiness', async () => {
    let hits = 0;
    server = createServer((req, res) => {
      hits++;
      res.writeHead(req.url === '/ready' ? 200 : 404).end();
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const clock = new FakeClock(START);
    const status = running('c1', START, '127.0.0.1');
    const m = new ProberManager({
      runtime: {
        runInContainer: async () => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 }),
        type: () => 'containerd',
      },
      recorder: { event: () => {} },
      podStatus: () => status,
      clock,
    });
    try {
      m.addPod(
        makePod({
          ports: [{ name: 'http', containerPort: port }],
          readinessProbe: { httpGet: { port: 'http', path: '/ready' } },
        }),
      );
      await clock.advance(0);
      await vi.waitFor(() => expect(m.results.readiness.get('c1')).toBe('success'));
      expect(hits).toBe(1);
    } finally {
      m.stop();
    }
  });
});

describe('ContainerRestartRules', () => {
  /** Probes on (true) or ends (false) once the container exited 1 in a pod Never, per the gate. */
  async function keepsProbing(containerRestartRules: boolean): Promise<boolean> {
    const t = setup({ containerRestartRules });
    t.statuses.set('uid-web', running('c1'));
    const container = { restartPolicy: 'Always', readinessProbe: { exec: { command: ['r'] } } };
    t.m.addPod(makePod(container, { restartPolicy: 'Never' }));
    await t.tick(0);
    const exited = running('c1');
    exited.containerStatuses![0]!.state = { terminated: { exitCode: 1 } };
    t.statuses.set('uid-web', exited);
    await t.tick(10_000);
    return t.m.workerCount() === 1;
  }

  it("keeps probing an exited container that its own policy restarts, unlike the pod's", async () => {
    expect(await keepsProbing(true)).toBe(true);
    expect(await keepsProbing(false)).toBe(false);
  });
});

describe('the ticker', () => {
  /** A runner whose probes take `durations` ms in turn (then none), recording when each started. */
  function timedRunner(clock: FakeClock, durations: number[]) {
    const startedAt: number[] = [];
    const runner = async () => {
      startedAt.push(clock.now() - START);
      const ms = durations.shift() ?? 0;
      if (ms > 0) await new Promise<void>((resolve) => clock.setTimer(ms, resolve));
      return { result: 'success' as const, output: '' };
    };
    return { startedAt, runner };
  }

  it('keeps its phase when a probe takes part of the period', async () => {
    const clock = new FakeClock(START);
    const r = timedRunner(clock, [300, 300, 300]);
    const t = setup({ clock, runner: r.runner });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(makePod({ readinessProbe: { exec: { command: ['r'] }, periodSeconds: 1 } }));
    await clock.advance(3500);
    // time.Ticker, not a sleep after each probe (which would give 0, 1300, 2600).
    expect(r.startedAt).toEqual([0, 1000, 2000, 3000]);
  });

  it('probes again at once after a probe that outlasted the period, dropping the ticks beyond one', async () => {
    const clock = new FakeClock(START);
    const r = timedRunner(clock, [2500]);
    const t = setup({ clock, runner: r.runner });
    t.statuses.set('uid-web', running('c1'));
    t.m.addPod(makePod({ livenessProbe: { exec: { command: ['l'] }, periodSeconds: 1 } }));
    await clock.advance(4500);
    // The tick at 1 s waited in the channel, the one at 2 s was dropped; the ticker's phase holds.
    expect(r.startedAt).toEqual([0, 2500, 3000, 4000]);
  });
});
