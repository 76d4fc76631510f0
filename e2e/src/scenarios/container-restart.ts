import type { CasesScenario } from '@kh/harness';
import { containerStatus, createPod, podFor, podSummary, readPod, waitForPod } from '../support/pods.js';

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
  timeoutMs: 7 * 60_000,
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
        // WaitForPodContainerToFail, which upstream expects to fail: the pod does not stay Pending.
        await waitForPod(
          ctx,
          name,
          'leaves Pending',
          (p) => (p.status?.phase ?? 'Pending') !== 'Pending',
          60_000,
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
