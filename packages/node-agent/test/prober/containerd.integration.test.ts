// The prober with the runtime manager on real containerd, the way the pod workers will wire
// them: exec probes through CRI ExecSync, liveness results fed to syncPod (which kills and
// restarts the container with a Killing event), readiness fed to the API status.

import { realClock } from '@kh/apimachinery';
import type { CriClient } from '@kh/cri-api';
import { type KubeGenericRuntimeManager, newCrashLoopBackoff } from '@kh/runtime-manager';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import { ProberManager } from '../../src/prober/manager.js';
import { generateAPIPodStatus } from '../../src/status/generate.js';
import { type ContainerdTestNode, startContainerdNode } from '../helpers/containerd.js';

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')('probes on real containerd', () => {
  let node: ContainerdTestNode<'busybox'> | undefined;
  let cri: CriClient;
  let runtime: KubeGenericRuntimeManager;
  let prober: ProberManager | undefined;
  let busybox: string;
  const events: string[] = [];
  const metrics = new KubeletMetrics();
  const statuses = new Map<string, V1PodStatus>();

  beforeAll(async () => {
    node = await startContainerdNode(['busybox']);
    cri = node.cri;
    busybox = `docker.io/${node.refs.busybox}`;
    const recorder = {
      event: (_pod: V1Pod, type: string, reason: string, message: string) => {
        events.push(`${type} ${reason} ${message}`);
      },
    };
    prober = new ProberManager({
      runtime: {
        runInContainer: (id, cmd, t) => runtime.runInContainer(id, cmd, t),
        type: () => 'containerd',
      },
      recorder,
      podStatus: (uid) => statuses.get(uid),
      clock: realClock,
      metrics,
    });
    runtime = await node.runtimeManager({ recorder, probeResults: prober.results.forRuntime });
  }, 600_000);

  afterAll(async () => {
    prober?.stop();
    await node?.stop();
  }, 120_000);

  it('restarts a container whose liveness probe fails and tracks readiness', async () => {
    if (!prober) throw new Error('no prober');
    const pod: V1Pod = {
      metadata: { name: 'live', namespace: 'default', uid: 'uid-live' },
      spec: {
        terminationGracePeriodSeconds: 1,
        restartPolicy: 'Always',
        containers: [
          {
            name: 'app',
            image: busybox,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', 'touch /tmp/healthy; trap "exit 0" TERM; sleep 3600 & wait'],
            livenessProbe: {
              exec: { command: ['cat', '/tmp/healthy'] },
              periodSeconds: 1,
              failureThreshold: 2,
            },
            readinessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1 },
          },
        ],
      },
    };
    const backoff = newCrashLoopBackoff();
    // One pass of a pod worker: sync, then publish the API status the prober reads.
    const syncOnce = async () => {
      const before = await runtime.getPodStatus('uid-live', 'live', 'default');
      await runtime.syncPod(pod, before, [], backoff);
      const after = await runtime.getPodStatus('uid-live', 'live', 'default');
      const status = generateAPIPodStatus({
        pod,
        runtime: after,
        oldStatus: statuses.get('uid-live'),
        nodeIP: '127.0.0.1',
        now: new Date(),
        probes: prober?.results.forStatus,
      });
      statuses.set('uid-live', status);
      return status;
    };
    const until = async (what: string, check: (s: V1PodStatus) => boolean, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const s = await syncOnce();
        if (check(s)) return s;
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s.containerStatuses)}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    };

    await syncOnce();
    prober.addPod(pod);
    const ready = await until('ready', (s) => s.containerStatuses?.[0]?.ready === true);
    const firstId = ready.containerStatuses?.[0]?.containerID;
    expect(firstId).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);

    const bare = firstId?.replace('containerd://', '') ?? '';
    await cri.execSync({ containerId: bare, cmd: ['rm', '/tmp/healthy'], timeout: 5n });
    const restarted = await until(
      'restart',
      (s) => s.containerStatuses?.[0]?.restartCount === 1 && s.containerStatuses?.[0]?.ready === true,
    );
    expect(restarted.containerStatuses?.[0]?.containerID).not.toBe(firstId);
    expect(events).toContain(
      "Warning Unhealthy Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n",
    );
    expect(events).toContain('Normal Killing Container app failed liveness probe, will be restarted');
    expect(events.some((e) => e.startsWith('Warning Unhealthy Readiness probe failed'))).toBe(true);
    const text = await metrics.probesRegistry.getSingleMetricAsString('prober_probe_total');
    expect(text).toMatch(/probe_type="Liveness".*result="failed"\} [2-9]/);
  }, 180_000);
});
