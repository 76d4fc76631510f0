import type { CasesScenario } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { containerStatus, createPod, podFor, podSummary, readPod, waitingReason } from '../support/pods.js';

// Upstream's container_restart_test.go (test/e2e_node): a container that always fails restarts
// on the kubelet's default CrashLoopBackOff curve (10 s doubling to 5 min). Upstream runs it behind
// its CRI proxy, which this case does not use (it only resets the proxy's injected errors).
const FILE = 'test/e2e_node/container_restart_test.go';
const CONTAINER = 'restarts';

export const containerRestart: CasesScenario<void> = {
  name: 'container-restart',
  estimateMs: 80_000,
  // Only its own pod; the back-off it watches is that pod's.
  isolation: 'namespace',
  description:
    "container_restart_test.go's default case: a container that exits 1 at once restarts at least 3 times within 5 min and no more than the default back-off's 7",
  needs: ['real-containers'],
  // Upstream's 1 min, 30 s and 5 min steps, and room for the pod's start.
  timeoutMs: 8 * 60_000,
  cases: [
    {
      name: 'Container Restart Container restart backs off Container restart backs off.',
      file: FILE,
      tags: ['Feature:CriProxy', 'Serial'],
      async run(ctx) {
        const name = 'container-restart';
        await createPod(
          ctx,
          podFor(ctx, name, {
            containers: [
              {
                name: CONTAINER,
                image: ctx.images.busybox,
                imagePullPolicy: 'IfNotPresent',
                command: ['sh', '-c', 'exit 1'],
              },
            ],
          }),
        );
        // WaitForPodContainerToFail(CrashLoopBackOff, 1 min), which upstream expects to fail: it
        // fails when the pod leaves Pending or at its timeout (a pod slow to start still passes);
        // only a Pending pod whose container waits in CrashLoopBackOff would pass it.
        const pendingBackOff = (p: V1Pod) =>
          (p.status?.phase ?? 'Pending') === 'Pending' && waitingReason(p, CONTAINER) === 'CrashLoopBackOff';
        const until = performance.now() + 60_000;
        let seen = await readPod(ctx, name);
        while (
          performance.now() < until &&
          (seen.status?.phase ?? 'Pending') === 'Pending' &&
          !pendingBackOff(seen)
        ) {
          await ctx.sleep(2_000);
          seen = await readPod(ctx, name);
        }
        ctx.check.ok(
          `pod ${name} is not Pending with ${CONTAINER} waiting in CrashLoopBackOff`,
          !pendingBackOff(seen),
          podSummary(seen),
          'Running (or still Pending without CrashLoopBackOff)',
        );
        // Upstream's hard 30 s wait is the check's point: a container restarted without back-off
        // would be far past 7 restarts by then. Default curve: 0 s, 0 s, 10 s, 30 s, 70 s.
        await ctx.sleep(30_000);
        const pod = await ctx.check.eventually(
          `container ${CONTAINER} restarted at least 3 times`,
          () => readPod(ctx, name),
          (p) => (containerStatus(p, CONTAINER)?.restartCount ?? 0) >= 3,
          { timeoutMs: 5 * 60_000, intervalMs: 1_000, expected: 'restartCount >= 3', describe: podSummary },
        );
        const restarts = containerStatus(pod, CONTAINER)?.restartCount ?? 0;
        ctx.check.ok('the container backed off: at most 7 restarts', restarts <= 7, restarts, '<= 7');
      },
    },
  ],
};
