// The probe suites delete each case's pod (grace 0) as the case ends, passed or failed, as
// upstream's runLivenessTest does in its DeferCleanup: a pod left to the cell's end kept its exec
// probes and crash loop going through the other cases' 4-minute windows. No containers: a stub API.
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
