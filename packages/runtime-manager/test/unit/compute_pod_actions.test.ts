import { describe, expect, it } from 'vitest';
import type { ProbeResults } from '../../src/container/runtime.js';
import { computePodActions, shouldContainerBeRestarted } from '../../src/kuberuntime/compute_pod_actions.js';
import { c, cs, pod, sandbox, status } from './helpers.js';

const app = c('app');
const side = c('side');

describe('computePodActions: sandbox', () => {
  it('creates a sandbox (attempt 0) and starts every container for a new pod', () => {
    const a = computePodActions(pod({ containers: [app, side] }), status([]));
    expect(a).toMatchObject({ createSandbox: true, killPod: true, attempt: 0, containersToStart: [0, 1] });
  });

  it('re-creates a dead sandbox with the next attempt and kills the rest', () => {
    const a = computePodActions(
      pod({ containers: [app] }),
      status([sandbox({ state: 'notready', attempt: 2 })], [cs(app, 'exited', { exitCode: 1 })]),
    );
    expect(a).toMatchObject({
      createSandbox: true,
      killPod: true,
      attempt: 3,
      sandboxId: 'sb-1',
      containersToStart: [0],
    });
  });

  it('re-creates the sandbox when the network namespace changed or there is no IP', () => {
    const hostNet = computePodActions(
      pod({ containers: [app], hostNetwork: true }),
      status([sandbox()], [cs(app, 'running')]),
    );
    expect(hostNet).toMatchObject({
      createSandbox: true,
      attempt: 1,
      sandboxReason: 'sandbox network namespace changed',
    });
    const noIp = computePodActions(
      pod({ containers: [app] }),
      status([sandbox({ ip: '' })], [cs(app, 'running')]),
    );
    expect(noIp.createSandbox).toBe(true);
    // A runtime that reports no network status at all is not treated as "no IP".
    const none = computePodActions(
      pod({ containers: [app] }),
      status([sandbox({ ip: undefined })], [cs(app, 'running')]),
    );
    expect(none.createSandbox).toBe(false);
  });

  it('reconciles two ready sandboxes', () => {
    const a = computePodActions(
      pod({ containers: [app] }),
      status([sandbox({ id: 'b', attempt: 1 }), sandbox({ id: 'a' })], [cs(app, 'running')]),
    );
    expect(a).toMatchObject({ createSandbox: true, killPod: true, attempt: 2 });
  });

  it('does not re-create the sandbox of a finished restartPolicy Never pod', () => {
    const a = computePodActions(
      pod({ containers: [app], restartPolicy: 'Never' }),
      status([sandbox({ state: 'notready' })], [cs(app, 'exited', { exitCode: 0 })]),
    );
    expect(a).toMatchObject({ createSandbox: false, killPod: true, containersToStart: [] });
  });

  it('with OnFailure, a new sandbox skips containers that succeeded', () => {
    const a = computePodActions(
      pod({ containers: [app, side], restartPolicy: 'OnFailure' }),
      status(
        [sandbox({ state: 'notready' })],
        [cs(app, 'exited', { exitCode: 0 }), cs(side, 'exited', { exitCode: 2 })],
      ),
    );
    expect(a).toMatchObject({ createSandbox: true, containersToStart: [1] });
  });

  it('starts with the first init container in a new sandbox', () => {
    const a = computePodActions(pod({ containers: [app], initContainers: [c('i1'), c('i2')] }), status([]));
    expect(a).toMatchObject({ createSandbox: true, initContainersToStart: [0], containersToStart: [] });
  });
});

describe('computePodActions: init containers', () => {
  const i1 = c('i1');
  const i2 = c('i2');
  const spec = (restartPolicy = 'Always') =>
    pod({ containers: [app], initContainers: [i1, i2], restartPolicy });

  it('runs them one at a time, in order', () => {
    expect(computePodActions(spec(), status([sandbox()], [cs(i1, 'running')])).initContainersToStart).toEqual(
      [],
    );
    const next = computePodActions(spec(), status([sandbox()], [cs(i1, 'exited', { exitCode: 0 })]));
    expect(next).toMatchObject({ initContainersToStart: [1], containersToStart: [], killPod: false });
  });

  it('starts app containers once every init container succeeded', () => {
    const a = computePodActions(
      spec(),
      status([sandbox()], [cs(i2, 'exited', { exitCode: 0 }), cs(i1, 'exited', { exitCode: 0 })]),
    );
    expect(a).toMatchObject({ initContainersToStart: [], containersToStart: [0], killPod: false });
  });

  it('retries a failed init container unless restartPolicy is Never', () => {
    const failed = [cs(i1, 'exited', { exitCode: 1 })];
    expect(computePodActions(spec('OnFailure'), status([sandbox()], failed)).initContainersToStart).toEqual([
      0,
    ]);
    expect(computePodActions(spec('Always'), status([sandbox()], failed)).initContainersToStart).toEqual([0]);
    const never = computePodActions(spec('Never'), status([sandbox()], failed));
    expect(never).toMatchObject({ killPod: true, initContainersToStart: [], containersToStart: [] });
  });

  it('kills an init container in unknown state before retrying it', () => {
    const s = cs(i1, 'unknown');
    const a = computePodActions(spec(), status([sandbox()], [s]));
    expect(a.initContainersToStart).toEqual([0]);
    expect(a.containersToKill.has(s.id.id)).toBe(true);
  });

  it('never reruns init containers once an app container exists', () => {
    const a = computePodActions(spec(), status([sandbox()], [cs(app, 'running')]));
    expect(a).toMatchObject({ initContainersToStart: [], containersToStart: [], killPod: false });
  });

  it('starts a sidecar in order and keeps it running beside the app', () => {
    const sc = c('sc', { restartPolicy: 'Always' });
    const p = pod({ containers: [app], initContainers: [sc, i1] });
    expect(computePodActions(p, status([sandbox()])).initContainersToStart).toEqual([0]);
    // Sidecar running: the regular init container runs next.
    expect(computePodActions(p, status([sandbox()], [cs(sc, 'running')])).initContainersToStart).toEqual([1]);
    // Initialized, sidecar died: it is restarted while the app keeps running.
    const a = computePodActions(
      p,
      status([sandbox()], [cs(app, 'running'), cs(sc, 'exited', { exitCode: 1 })]),
    );
    expect(a).toMatchObject({ initContainersToStart: [0], containersToStart: [], killPod: false });
    // App finished under Never: sidecars do not keep the pod alive.
    const never = pod({ containers: [app], initContainers: [sc], restartPolicy: 'Never' });
    const done = computePodActions(
      never,
      status([sandbox()], [cs(app, 'exited', { exitCode: 0 }), cs(sc, 'running')]),
    );
    expect(done.killPod).toBe(true);
    // Nor does a dead sidecar get restarted in a finished pod.
    const deadSidecar = computePodActions(
      never,
      status([sandbox()], [cs(app, 'exited', { exitCode: 0 }), cs(sc, 'exited', { exitCode: 1 })]),
    );
    expect(deadSidecar).toMatchObject({ killPod: true, initContainersToStart: [] });
  });

  it('waits for a sidecar startup probe before the next init container', () => {
    const sc = c('sc', { restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } });
    const p = pod({ containers: [app], initContainers: [sc, i1] });
    const s = cs(sc, 'running');
    const probes = (r?: 'success' | 'failure'): ProbeResults => ({
      liveness: () => undefined,
      startup: () => r,
    });
    expect(computePodActions(p, status([sandbox()], [s]), probes()).initContainersToStart).toEqual([]);
    expect(computePodActions(p, status([sandbox()], [s]), probes('success')).initContainersToStart).toEqual([
      1,
    ]);
  });
  it.each([
    ['liveness', 'LivenessProbe'],
    ['startup', 'StartupProbe'],
  ] as const)('kills and restarts a sidecar that failed its %s probe, even under Never', (probe, reason) => {
    const sc = c('sc', { restartPolicy: 'Always' });
    const s = cs(sc, 'running');
    const failed = (id: string) => (id === s.id.id ? 'failure' : undefined);
    const probes: ProbeResults = {
      liveness: probe === 'liveness' ? failed : () => undefined,
      startup: probe === 'startup' ? failed : () => undefined,
    };
    const p = pod({ containers: [app], initContainers: [sc], restartPolicy: 'Never' });
    const a = computePodActions(p, status([sandbox()], [cs(app, 'running'), s]), probes);
    expect(a).toMatchObject({ initContainersToStart: [0], containersToStart: [], killPod: false });
    expect(a.containersToKill.get(s.id.id)).toMatchObject({
      reason,
      message: `Init container sc failed ${probe} probe, will be restarted`,
    });
  });
});

describe('computePodActions: restarts', () => {
  const running = (p = 'Always') => pod({ containers: [app], restartPolicy: p });

  it('keeps a healthy running pod as it is', () => {
    const a = computePodActions(running(), status([sandbox()], [cs(app, 'running')]));
    expect(a).toMatchObject({ killPod: false, createSandbox: false, containersToStart: [] });
    expect(a.containersToKill.size).toBe(0);
  });

  it.each([
    ['Always', 0, true],
    ['Always', 1, true],
    ['OnFailure', 1, true],
    ['OnFailure', 0, false],
    ['Never', 1, false],
    ['Never', 0, false],
  ])('restartPolicy %s, exit code %i -> restart %s', (policy, exitCode, restart) => {
    const st = status([sandbox()], [cs(app, 'exited', { exitCode })]);
    const a = computePodActions(running(policy), st);
    expect(a.containersToStart).toEqual(restart ? [0] : []);
    expect(a.killPod).toBe(!restart);
    expect(shouldContainerBeRestarted(app, running(policy), st)).toBe(restart);
  });

  it('restarts a running container whose spec hash changed, whatever the policy', () => {
    const old = cs(c('app', { image: 'busybox:old' }), 'running');
    const a = computePodActions(running('Never'), status([sandbox()], [old]));
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill.get(old.id.id)).toMatchObject({
      reason: 'SpecChanged',
      message: 'Container app definition changed, will be restarted',
    });
  });

  it('kills a container that failed liveness, restarting it per policy', () => {
    const s = cs(app, 'running');
    const probes: ProbeResults = {
      liveness: (id) => (id === s.id.id ? 'failure' : undefined),
      startup: () => undefined,
    };
    const a = computePodActions(running(), status([sandbox()], [s]), probes);
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill.get(s.id.id)?.reason).toBe('LivenessProbe');
    const never = computePodActions(running('Never'), status([sandbox()], [s]), probes);
    expect(never.containersToStart).toEqual([]);
    expect(never.containersToKill.get(s.id.id)?.message).toBe('Container app failed liveness probe');
  });

  it('does not restart anything of a pod being deleted', () => {
    const p = running();
    p.metadata!.deletionTimestamp = new Date();
    expect(
      computePodActions(p, status([sandbox()], [cs(app, 'exited', { exitCode: 1 })])).containersToStart,
    ).toEqual([]);
    expect(computePodActions(p, status([])).createSandbox).toBe(false);
  });

  it('neither kills nor restarts for a liveness or startup failure once the pod is being deleted', () => {
    const sc = c('sc', { restartPolicy: 'Always' });
    const [sidecar, main] = [cs(sc, 'running'), cs(app, 'running')];
    // Results recorded before the prober saw the deletion.
    const probes: ProbeResults = {
      liveness: (id) => (id === sidecar.id.id ? 'failure' : undefined),
      startup: (id) => (id === main.id.id ? 'failure' : undefined),
    };
    const p = pod({ containers: [app], initContainers: [sc] }, { deletionTimestamp: new Date() });
    const a = computePodActions(p, status([sandbox()], [main, sidecar]), probes);
    expect(a).toMatchObject({ killPod: false, initContainersToStart: [], containersToStart: [] });
    expect([...a.containersToKill.keys()]).toEqual([]);
  });
});

describe('computePodActions: sidecar resize', () => {
  const sized = (cpu: string) => ({ requests: { cpu }, limits: { cpu } });
  /** Each container's actuated resources: what its spec had at `cpu`. */
  const actuatedAt = (cpu: string) => ({
    getActuatedResources: () => sized(cpu),
    setActuatedResources: () => undefined,
  });
  const i1 = c('i1');
  // At its actuated size: only the sidecars move.
  const app = c('app', { resources: sized('100m') });

  it('resizes a running sidecar while the pod still initializes', () => {
    const sc = c('sc', { restartPolicy: 'Always', resources: sized('200m') });
    const p = pod({ containers: [app], initContainers: [sc, i1] });
    const a = computePodActions(
      p,
      status([sandbox()], [cs(sc, 'running'), cs(i1, 'running')]),
      undefined,
      actuatedAt('100m'),
    );
    expect(a.containersToUpdate.cpu.map((u) => u.name)).toEqual(['sc']);
    expect(a.containersToUpdate.memory).toEqual([]);
    expect(a.initContainersToStart).toEqual([]);
  });

  it('waits for a sidecar startup probe to succeed before resizing it', () => {
    const sc = c('sc', {
      restartPolicy: 'Always',
      resources: sized('200m'),
      startupProbe: { exec: { command: ['true'] } },
    });
    const p = pod({ containers: [app], initContainers: [sc] });
    const st = status([sandbox()], [cs(app, 'running'), cs(sc, 'running')]);
    const probes = (r?: 'success'): ProbeResults => ({ liveness: () => undefined, startup: () => r });
    expect(computePodActions(p, st, probes(), actuatedAt('100m')).containersToUpdate.cpu).toEqual([]);
    expect(
      computePodActions(p, st, probes('success'), actuatedAt('100m')).containersToUpdate.cpu.map(
        (u) => u.name,
      ),
    ).toEqual(['sc']);
  });

  it('restarts sidecars for RestartContainer in spec order with the other init starts', () => {
    const restart = [{ resourceName: 'cpu', restartPolicy: 'RestartContainer' }];
    const sc1 = c('sc1', { restartPolicy: 'Always', resources: sized('200m'), resizePolicy: restart });
    const sc2 = c('sc2', { restartPolicy: 'Always', resources: sized('100m') });
    const p = pod({ containers: [app], initContainers: [sc1, sc2] });
    const running = cs(sc1, 'running');
    const a = computePodActions(
      p,
      status([sandbox()], [cs(app, 'running'), running, cs(sc2, 'exited', { exitCode: 1 })]),
      undefined,
      actuatedAt('100m'),
    );
    expect(a.initContainersToStart).toEqual([0, 1]);
    expect(a.containersToKill.get(running.id.id)).toMatchObject({
      reason: 'Resize',
      message: 'Container sc1 resize requires restart',
    });
    expect(a).toMatchObject({ updatePodResources: true, containersToStart: [], killPod: false });
  });
});
