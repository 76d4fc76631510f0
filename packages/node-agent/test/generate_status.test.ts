import { type ContainerStatus, type PodStatus, type PodSyncResult, SyncStepError } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { generateAPIPodStatus, podPhase } from '../src/status/generate.js';
import { ReasonCache } from '../src/status/reason_cache.js';

const now = new Date(10_000);

function pod(over: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: {
      containers: [
        { name: 'a', image: 'busybox' },
        { name: 'b', image: 'httpd' },
      ],
      ...over,
    },
  };
}

function container(
  name: string,
  state: ContainerStatus['state'],
  over: Partial<ContainerStatus> = {},
): ContainerStatus {
  return {
    id: { type: 'containerd', id: `${name}-id` },
    name,
    state,
    createdAt: new Date(1000),
    ...(state !== 'created' ? { startedAt: new Date(2000) } : {}),
    image: name === 'a' ? 'busybox' : 'httpd',
    // As the runtime reports them: the repo digest as ImageRef, the config digest as ImageId.
    imageRef: 'docker.io/library/busybox@sha256:abc',
    imageId: 'sha256:ref',
    hash: 'h',
    restartCount: 0,
    ...over,
  };
}

function runtime(containers: ContainerStatus[], sandboxReady = true): PodStatus {
  return {
    uid: 'u1',
    name: 'web',
    namespace: 'default',
    ips: [],
    sandboxStatuses: [
      {
        id: 's1',
        state: sandboxReady ? 'ready' : 'notready',
        attempt: 0,
        createdAt: new Date(500),
        ip: '10.1.0.5',
        additionalIps: [],
        hostNetwork: false,
      },
    ],
    containerStatuses: containers,
    timestamp: now,
  };
}

/** A reason cache after a sync whose container starts failed with these reasons. */
function reasons(failed: Record<string, [reason: string, message: string]>, uid = 'u1'): ReasonCache {
  const cache = new ReasonCache();
  const steps: PodSyncResult['steps'] = Object.entries(failed).map(([target, [reason, message]]) => ({
    action: 'StartContainer',
    target,
    error: new SyncStepError(reason, message),
    reason,
    message,
  }));
  cache.update(uid, { steps });
  return cache;
}

const crashed = (restartCount = 2) =>
  container('a', 'exited', { exitCode: 1, reason: 'Error', finishedAt: new Date(3000), restartCount });

const cond = (s: ReturnType<typeof generateAPIPodStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

describe('generateAPIPodStatus', () => {
  it('reports a running, ready pod with IPs, QoS and container IDs', () => {
    const s = generateAPIPodStatus({
      pod: pod(),
      runtime: runtime([container('a', 'running'), container('b', 'running')]),
      nodeIP: '172.18.0.2',
      now,
    });
    expect(s).toMatchObject({
      phase: 'Running',
      podIP: '10.1.0.5',
      podIPs: [{ ip: '10.1.0.5' }],
      hostIP: '172.18.0.2',
      startTime: now,
      qosClass: 'BestEffort',
    });
    expect(s.containerStatuses?.[0]).toEqual({
      name: 'a',
      image: 'busybox',
      imageID: 'docker.io/library/busybox@sha256:abc',
      containerID: 'containerd://a-id',
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: new Date(2000) } },
      lastState: {},
    });
    for (const t of [
      'PodReadyToStartContainers',
      'Initialized',
      'ContainersReady',
      'Ready',
      'PodScheduled',
    ]) {
      expect(cond(s, t)?.status).toBe('True');
    }
  });

  it("reports the identity the runtime gave the container's first process as user.linux", () => {
    const user = { uid: 1000n, gid: 1000n, supplementalGroups: [1000n, 50000n, 60000n] };
    const s = generateAPIPodStatus({
      pod: pod(),
      runtime: runtime([container('a', 'running', { user }), container('b', 'running')]),
      nodeIP: 'n',
      now,
    });
    expect(s.containerStatuses?.[0]?.user).toEqual({
      linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 50000, 60000] },
    });
    // A runtime that reports no user (no SupplementalGroupsPolicy support) leaves the field out.
    expect(s.containerStatuses?.[1]).not.toHaveProperty('user');
  });

  it('is Pending with ContainerCreating before containers exist', () => {
    const s = generateAPIPodStatus({ pod: pod(), runtime: runtime([], false), nodeIP: 'n', now });
    expect(s.phase).toBe('Pending');
    expect(s.containerStatuses?.map((c) => c.state)).toEqual([
      { waiting: { reason: 'ContainerCreating' } },
      { waiting: { reason: 'ContainerCreating' } },
    ]);
    expect(cond(s, 'PodReadyToStartContainers')?.status).toBe('False');
    expect(cond(s, 'Ready')).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [a b]',
    });
    expect(s.podIP).toBeUndefined();
  });

  // generateAPIPodStatus's three-way merge: the restarted kubelet reports a rejected pod again.
  it('keeps a terminal phase the status holds, with its reason and message, and drops them with the phase', () => {
    const rejected = {
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu",
    };
    const again = generateAPIPodStatus({
      pod: pod(),
      runtime: runtime([], false),
      oldStatus: rejected,
      podIsTerminal: true,
      nodeIP: 'n',
      now,
    });
    expect(again).toMatchObject(rejected);
    const fromApi = generateAPIPodStatus({
      pod: { ...pod(), status: rejected },
      runtime: runtime([], false),
      nodeIP: 'n',
      now,
    });
    expect(fromApi).toMatchObject(rejected);
    const running = generateAPIPodStatus({
      pod: pod(),
      runtime: runtime([container('a', 'running'), container('b', 'running')]),
      oldStatus: { phase: 'Pending', reason: 'Something', message: 'went before' },
      nodeIP: 'n',
      now,
    });
    expect(running.phase).toBe('Running');
    expect(running).not.toHaveProperty('reason');
    expect(running).not.toHaveProperty('message');
  });

  it('shows pull failures and crash loops as waiting reasons with the last termination', () => {
    const s = generateAPIPodStatus({
      pod: pod(),
      runtime: runtime([
        container('a', 'exited', {
          exitCode: 1,
          reason: 'Error',
          finishedAt: new Date(3000),
          restartCount: 2,
        }),
      ]),
      reasons: reasons({
        a: ['CrashLoopBackOff', 'back-off 20s restarting failed container=a pod=web_default(u1)'],
        b: ['ErrImagePull', 'failed to pull image "httpd"'],
      }),
      nodeIP: 'n',
      now,
    });
    const [a, b] = s.containerStatuses ?? [];
    expect(a?.state).toEqual({
      waiting: {
        reason: 'CrashLoopBackOff',
        message: 'back-off 20s restarting failed container=a pod=web_default(u1)',
      },
    });
    expect(a?.lastState?.terminated).toMatchObject({
      exitCode: 1,
      reason: 'Error',
      finishedAt: new Date(3000),
      containerID: 'containerd://a-id',
    });
    expect(a?.restartCount).toBe(2);
    expect(b?.state).toEqual({
      waiting: { reason: 'ErrImagePull', message: 'failed to pull image "httpd"' },
    });
    expect(s.phase).toBe('Pending'); // b never started
  });

  it('keeps a cached reason across passes until a start succeeds, as the kubelet does', () => {
    const p = pod({ containers: [{ name: 'a', image: 'busybox' }] });
    const cache = reasons({
      a: ['CrashLoopBackOff', 'back-off 10s restarting failed container=a pod=web_default(u1)'],
    });
    // The pass after the one that backed off reads the runtime before it syncs: still waiting.
    const before = generateAPIPodStatus({
      pod: p,
      runtime: runtime([crashed()]),
      reasons: cache,
      nodeIP: 'n',
      now,
    });
    expect(before.containerStatuses?.[0]?.state?.waiting?.reason).toBe('CrashLoopBackOff');
    expect(before.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(1);
    expect(before.phase).toBe('Running');
    // Its start succeeded: the entry is gone, and so is the waiting state once the container exits.
    cache.update('u1', { steps: [{ action: 'StartContainer', target: 'a' }] });
    const after = generateAPIPodStatus({
      pod: p,
      runtime: runtime([crashed(3)]),
      reasons: cache,
      nodeIP: 'n',
      now,
    });
    expect(after.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
  });

  it('ignores a cached reason for a container that runs or will not be started again', () => {
    const cache = reasons({
      a: ['CrashLoopBackOff', 'back-off 10s restarting failed container=a pod=web_default(u1)'],
      init: ['RunInitContainerError', 'exit 1'],
    });
    const stateOf = (p: V1Pod, c: ContainerStatus, podIsTerminal = false) => {
      const s = generateAPIPodStatus({
        pod: p,
        runtime: runtime([c]),
        reasons: cache,
        podIsTerminal,
        nodeIP: 'n',
        now,
      });
      return [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])].find(
        (x) => x.name === c.name,
      )?.state;
    };
    const single = pod({ containers: [{ name: 'a', image: 'busybox' }] });
    expect(stateOf(single, container('a', 'running'))?.running).toBeDefined();
    expect(stateOf(pod({ ...single.spec, restartPolicy: 'Never' }), crashed())?.terminated).toBeDefined();
    expect(stateOf(single, crashed(), true)?.terminated).toBeDefined();
    const deleting = { ...single, metadata: { ...single.metadata, deletionTimestamp: new Date(5000) } };
    expect(stateOf(deleting, crashed())?.terminated).toBeDefined();
    const withInit = pod({ ...single.spec, initContainers: [{ name: 'init', image: 'busybox' }] });
    expect(stateOf(withInit, container('init', 'exited', { exitCode: 0 }))?.terminated).toBeDefined();
    expect(stateOf(withInit, container('init', 'exited', { exitCode: 1 }))?.waiting?.reason).toBe(
      'RunInitContainerError',
    );
  });

  it('gates Initialized on init containers and keeps startTime', () => {
    const p = pod({ initContainers: [{ name: 'init', image: 'busybox' }] });
    const s = generateAPIPodStatus({
      pod: p,
      runtime: runtime([container('init', 'running')]),
      oldStatus: { startTime: new Date(1) },
      nodeIP: 'n',
      now,
    });
    expect(s.phase).toBe('Pending');
    expect(s.startTime).toEqual(new Date(1));
    expect(cond(s, 'Initialized')).toEqual({
      type: 'Initialized',
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [init]',
    });
    expect(s.initContainerStatuses?.[0]?.ready).toBe(false);
  });

  it('shows containers not created yet as PodInitializing, and a completed init container as ready', () => {
    const p = pod({
      initContainers: [
        { name: 'init1', image: 'busybox' },
        { name: 'init2', image: 'busybox' },
      ],
    });
    const gen = (containers: ContainerStatus[]) =>
      generateAPIPodStatus({ pod: p, runtime: runtime(containers), nodeIP: 'n', now });
    const first = gen([container('init1', 'running')]);
    expect(first.initContainerStatuses?.map((c) => [c.ready, c.state])).toEqual([
      [false, { running: { startedAt: new Date(2000) } }],
      [false, { waiting: { reason: 'PodInitializing' } }],
    ]);
    expect(first.containerStatuses?.map((c) => c.state?.waiting?.reason)).toEqual([
      'PodInitializing',
      'PodInitializing',
    ]);
    const failed = gen([
      container('init1', 'exited', { exitCode: 0 }),
      container('init2', 'exited', { exitCode: 1 }),
    ]);
    expect(failed.initContainerStatuses?.map((c) => c.ready)).toEqual([true, false]);
    expect(cond(failed, 'Initialized')?.message).toBe('containers with incomplete status: [init2]');
    expect(failed.containerStatuses?.[0]?.state?.waiting?.reason).toBe('PodInitializing');
  });

  it('waits for the readiness prober before a probed container is ready', () => {
    const p = pod({
      containers: [{ name: 'a', image: 'busybox', readinessProbe: { exec: { command: ['true'] } } }],
    });
    const rt = runtime([container('a', 'running')]);
    let result: boolean | undefined;
    const probes = { ready: () => result, started: () => undefined };
    expect(
      generateAPIPodStatus({ pod: p, runtime: rt, nodeIP: 'n', now, probes }).containerStatuses?.[0]?.ready,
    ).toBe(false);
    result = true;
    const s = generateAPIPodStatus({ pod: p, runtime: rt, nodeIP: 'n', now, probes });
    expect(s.containerStatuses?.[0]?.ready).toBe(true);
    expect(cond(s, 'Ready')?.status).toBe('True');
  });

  it('counts a sidecar that is not ready yet against the pod, first', () => {
    const p = pod({
      initContainers: [
        {
          name: 'side',
          image: 'busybox',
          restartPolicy: 'Always',
          readinessProbe: { exec: { command: ['true'] } },
        },
      ],
      containers: [{ name: 'a', image: 'busybox' }],
    });
    const rt = runtime([container('side', 'running'), container('a', 'running')]);
    let sideReady: boolean | undefined;
    const probes = {
      ready: (_: string, id: string) => (id === 'containerd://side-id' ? sideReady : true),
      started: () => undefined,
    };
    const s = generateAPIPodStatus({ pod: p, runtime: rt, nodeIP: 'n', now, probes });
    expect(cond(s, 'ContainersReady')).toMatchObject({
      status: 'False',
      message: 'containers with unready status: [side]',
    });
    expect(cond(s, 'Ready')?.status).toBe('False');
    sideReady = true;
    expect(
      cond(generateAPIPodStatus({ pod: p, runtime: rt, nodeIP: 'n', now, probes }), 'Ready')?.status,
    ).toBe('True');
  });

  it("keeps the pod IPs it had once the sandbox is gone, and takes a new sandbox's", () => {
    const p = pod({ containers: [{ name: 'a', image: 'busybox' }] });
    const oldStatus = { podIP: '10.0.0.5', podIPs: [{ ip: '10.0.0.5' }] };
    const gone = generateAPIPodStatus({
      pod: p,
      runtime: runtime([container('a', 'exited')], false),
      oldStatus,
      nodeIP: 'n',
      now,
    });
    expect(gone).toMatchObject(oldStatus);
    const fresh = generateAPIPodStatus({
      pod: p,
      runtime: { ...runtime([container('a', 'running')]), ips: ['10.0.0.9'] },
      oldStatus,
      nodeIP: 'n',
      now,
    });
    expect(fresh).toMatchObject({ podIP: '10.0.0.9', podIPs: [{ ip: '10.0.0.9' }] });
  });

  it('keeps the terminated status of a container the runtime no longer lists', () => {
    const p = pod({ restartPolicy: 'Never', containers: [{ name: 'a', image: 'busybox' }] });
    const stopped = generateAPIPodStatus({
      pod: p,
      runtime: runtime([container('a', 'exited', { exitCode: 3, finishedAt: new Date(4000) })], false),
      podIsTerminal: true,
      nodeIP: 'n',
      now,
    });
    const removed = generateAPIPodStatus({
      pod: p,
      runtime: runtime([], false),
      oldStatus: stopped,
      podIsTerminal: true,
      nodeIP: 'n',
      now,
    });
    expect(removed.containerStatuses?.[0]).toEqual(stopped.containerStatuses?.[0]);
    expect(removed.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 3 });
    expect(removed.phase).toBe('Failed');
  });

  it('uses the node IP for hostNetwork pods', () => {
    const s = generateAPIPodStatus({
      pod: pod({ hostNetwork: true }),
      runtime: runtime([]),
      nodeIP: '172.18.0.2',
      now,
    });
    expect(s.podIPs).toEqual([{ ip: '172.18.0.2' }]);
  });

  it('reports ephemeral containers apart, never ready, and keeps them out of phase and readiness', () => {
    const withDebuggers = pod({
      ephemeralContainers: [
        { name: 'dbg', image: 'busybox' },
        { name: 'done', image: 'busybox' },
        { name: 'pulling', image: 'busybox' },
      ],
    });
    const s = generateAPIPodStatus({
      pod: withDebuggers,
      runtime: runtime([
        container('a', 'running'),
        container('b', 'running'),
        container('dbg', 'running'),
        container('done', 'exited', { exitCode: 1, finishedAt: new Date(3000) }),
      ]),
      nodeIP: '172.18.0.2',
      now,
      reasons: reasons({ pulling: ['ErrImagePull', 'pull failed'], done: ['Error', 'ignored'] }),
    });
    expect(s.containerStatuses?.map((c) => c.name)).toEqual(['a', 'b']);
    expect(s.ephemeralContainerStatuses).toEqual([
      {
        name: 'dbg',
        image: 'busybox',
        imageID: 'docker.io/library/busybox@sha256:abc',
        containerID: 'containerd://dbg-id',
        ready: false,
        restartCount: 0,
        state: { running: { startedAt: new Date(2000) } },
        lastState: {},
      },
      expect.objectContaining({
        name: 'done',
        // Never started again: its exit stays its state, whatever a sync said since.
        state: {
          terminated: expect.objectContaining({
            exitCode: 1,
            reason: 'Error',
            containerID: 'containerd://done-id',
          }),
        },
      }),
      expect.objectContaining({
        name: 'pulling',
        state: { waiting: { reason: 'ErrImagePull', message: 'pull failed' } },
      }),
    ]);
    expect(s.phase).toBe('Running');
    expect(cond(s, 'Ready')?.status).toBe('True');
    expect(
      generateAPIPodStatus({ pod: pod(), runtime: runtime([]), nodeIP: '1.2.3.4', now }),
    ).not.toHaveProperty('ephemeralContainerStatuses');
  });
});

describe('podPhase', () => {
  const term = (exitCode: number) => ({
    name: 'x',
    image: '',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode } },
  });
  const run = { name: 'x', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } };
  it.each([
    ['Always', [term(0), term(0)], 'Running'],
    ['OnFailure', [term(0), term(0)], 'Succeeded'],
    ['OnFailure', [term(0), term(1)], 'Running'],
    ['Never', [term(0), term(1)], 'Failed'],
    ['Never', [term(0), run], 'Running'],
  ] as const)('restartPolicy %s with %j is %s', (restartPolicy, statuses, phase) => {
    expect(podPhase(pod({ restartPolicy }), [], [...statuses], false)).toBe(phase);
  });

  it('is Succeeded or Failed for a terminal pod with everything stopped', () => {
    expect(podPhase(pod(), [], [term(0), term(0)], true)).toBe('Succeeded');
    expect(podPhase(pod(), [], [term(0), term(137)], true)).toBe('Failed');
  });

  it('fails a Never pod whose init container failed', () => {
    const p = pod({ restartPolicy: 'Never', initContainers: [{ name: 'i', image: 'x' }] });
    expect(podPhase(p, [term(1)], [], false)).toBe('Failed');
    expect(podPhase({ ...p, spec: { ...p.spec!, restartPolicy: 'Always' } }, [term(1)], [], false)).toBe(
      'Pending',
    );
  });
});

describe('generateAPIPodStatus: in-place resize of a sidecar', () => {
  it("reports a running sidecar's resources and allocated requests in initContainerStatuses, as an app container's", () => {
    const size = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });
    const p = pod({
      containers: [{ name: 'a', image: 'busybox', resources: size('20m', '20Mi') }],
      initContainers: [
        { name: 'c1-init', image: 'busybox', restartPolicy: 'Always', resources: size('25m', '25Mi') },
      ],
    });
    const actuated: Record<string, ReturnType<typeof size>> = {
      a: size('20m', '20Mi'),
      'c1-init': size('20m', '20Mi'),
    };
    const status = generateAPIPodStatus({
      pod: p,
      runtime: runtime([container('a', 'running'), container('c1-init', 'running')]),
      nodeIP: '10.0.0.1',
      now,
      resize: { conditions: [], actuated: (name) => actuated[name], allocatedStatus: true },
    });
    // The runtime reports no cgroup values here: the last applied resources, not the allocation.
    expect(status.initContainerStatuses![0]).toMatchObject({
      name: 'c1-init',
      resources: size('20m', '20Mi'),
      allocatedResources: { cpu: '25m', memory: '25Mi' },
    });
    expect(status.containerStatuses![0]!.resources).toEqual(size('20m', '20Mi'));
  });
});
