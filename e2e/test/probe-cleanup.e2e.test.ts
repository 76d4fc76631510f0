// The probe suites delete each case's pod (grace 0) as the case ends, passed or failed, as
// upstream's runLivenessTest does in its DeferCleanup: a pod left to the cell's end kept its exec
// probes and crash loop going through the other cases' 4-minute windows. The teardown then waits
// for the containers to stop, but not for the two 500 s grace pods' (the agent gives them their
// pod's grace after a grace-0 deletion): that wait kept every suite 2 minutes past its last case.
// No containers: a stub API and CRI.
import { AssertionFailure, type AssertionResult, createChecks, type ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { probesSidecar, probesUpstream } from '../src/scenarios/probes-upstream.js';

interface Api {
  created: string[];
  deleted: { name: string; gracePeriodSeconds?: number }[];
  assertions: AssertionResult[];
}

/** A node whose probed container (app or sidecar) has restarted `restarts()` times at each read. */
function stubContext(api: Api, restarts: () => number): ScenarioContext {
  const pod = (name: string): V1Pod => {
    const status = { name: 'probed', containerID: 'containerd://c1', restartCount: restarts() };
    return {
      metadata: { name },
      status: { startTime: new Date(), containerStatuses: [status], initContainerStatuses: [status] },
    } as V1Pod;
  };
  return {
    namespace: 'ns',
    images: { busybox: 'busybox', netexec: 'netexec', httpd: 'httpd' },
    core: {
      createNamespacedPod: async ({ body }: { body: V1Pod }) => {
        api.created.push(body.metadata!.name!);
        return body;
      },
      readNamespacedPod: async ({ name }: { name: string }) => pod(name),
      deleteNamespacedPod: async (req: { name: string; gracePeriodSeconds?: number }) => {
        api.deleted.push({ name: req.name, gracePeriodSeconds: req.gracePeriodSeconds });
        return {};
      },
    },
    check: createChecks((a) => api.assertions.push(a)),
    note: () => {},
    sleep: async () => {},
  } as unknown as ScenarioContext;
}

const RESTARTED = 'should be restarted with a exec "cat /tmp/health" liveness probe';

describe.each([
  ['probes-upstream', probesUpstream, 'Probing container'],
  ['probes-sidecar', probesSidecar, 'Probing restartable init container'],
])('%s', (_name, suite, prefix) => {
  const theCase = suite.cases.find((c) => c.name === `${prefix} ${RESTARTED}`)!;

  it("deletes the case's pod with grace 0 once its assertions pass", async () => {
    const api: Api = { created: [], deleted: [], assertions: [] };
    let reads = 0;
    // Not restarted at the first look, restarted once at the next: the case passes.
    await theCase.run(
      stubContext(api, () => (reads++ < 2 ? 0 : 1)),
      undefined,
    );
    expect(api.created).toEqual(['liveness-exec']);
    expect(api.assertions.map((a) => [a.name, a.outcome])).toContainEqual([
      'liveness-exec: restarted 1 time(s) within 240 s',
      'passed',
    ]);
    expect(api.deleted).toEqual([{ name: 'liveness-exec', gracePeriodSeconds: 0 }]);
  });

  it("deletes the case's pod when an assertion fails, too", async () => {
    const api: Api = { created: [], deleted: [], assertions: [] };
    let reads = 0;
    // The restart count goes down: the case fails at once.
    const failing = theCase.run(
      stubContext(api, () => (reads++ < 2 ? 3 : 1)),
      undefined,
    );
    await expect(failing).rejects.toBeInstanceOf(AssertionFailure);
    expect(api.deleted).toEqual([{ name: 'liveness-exec', gracePeriodSeconds: 0 }]);
  });
});

describe("the probe suites' teardown", () => {
  const container = (pod: string, state: string) => ({
    id: `${pod}-c`,
    state,
    labels: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.container.name': 'probed' },
  });
  /** Each listContainers answers with the next list (the last one again when they run out). */
  function teardownContext(lists: ReturnType<typeof container>[][]) {
    const notes: [string, Record<string, unknown> | undefined][] = [];
    let slept = 0;
    const ctx = {
      namespace: 'ns',
      core: { deleteCollectionNamespacedPod: async () => ({}) },
      cri: { listContainers: async () => (lists.length > 1 ? lists.shift()! : lists[0]!) },
      note: (summary: string, detail?: Record<string, unknown>) => notes.push([summary, detail]),
      sleep: async (ms: number) => {
        slept += ms;
      },
    } as unknown as ScenarioContext;
    return { ctx, notes, slept: () => slept };
  }

  it('does not wait for the containers of the pods whose grace outlasts it, and names them', async () => {
    const grace = [container('liveness-grace', 'running'), container('startup-grace', 'running')];
    const t = teardownContext([[...grace, container('liveness-tcp', 'running')], grace]);
    await probesUpstream.teardown!(t.ctx, undefined);
    expect(t.slept()).toBe(2_000);
    expect(t.notes).toEqual([
      [
        expect.stringMatching(/^containers still stopping \d+ s after the pods were deleted$/),
        { running: 2, containers: ['liveness-grace/probed: running', 'startup-grace/probed: running'] },
      ],
    ]);
  });

  it('waits for any other container to stop', async () => {
    const t = teardownContext([
      [container('liveness-tcp', 'running')],
      [container('liveness-tcp', 'created')],
      [container('liveness-tcp', 'exited')],
    ]);
    await probesSidecar.teardown!(t.ctx, undefined);
    expect(t.slept()).toBe(4_000);
    expect(t.notes[0]![1]).toEqual({ running: 0 });
  });
});
