import type { Scenario } from '@kh/harness';
import type { V1Probe } from '@kubernetes/client-node';
import { allChecks } from '../support/concurrent.js';
import {
  containerStatus,
  createPod,
  eventsFor,
  execShellInContainer,
  POD_START_MS,
  POD_START_SHORT_MS,
  podCondition,
  podFor,
  type readPod,
  sh,
  waitForPod,
} from '../support/pods.js';
import { OBSERVATION_MS } from './probes-upstream.js';

const exec = (cmd: string, p: Partial<V1Probe> = {}): V1Probe => ({
  exec: { command: ['sh', '-c', cmd] },
  periodSeconds: 2,
  failureThreshold: 1,
  ...p,
});

/**
 * Modelled on Kubernetes' container_probe suite. All pods start together and are checked
 * concurrently so the cell's wall time is that of its slowest probe, not the sum.
 */
export const probes: Scenario = {
  name: 'probes',
  estimateMs: 22_000,
  // Only its namespace's pods: it shares a node with other such cells.
  isolation: 'namespace',
  description:
    'exec/httpGet/tcpSocket liveness and readiness, startup gating, readiness toggling, probe timeout',
  needs: ['real-containers'],
  upstream: [
    'should be restarted with a exec "cat /tmp/health" liveness probe',
    'should be restarted with a /healthz http liveness probe',
    'should be restarted with an exec liveness probe with timeout [MinimumKubeletVersion:1.20]',
  ].map((it) => ({ file: 'test/e2e/common/node/container_probe.go', case: `Probing container ${it}` })),
  // Room for upstream's bounds on the restart cases: a pod start (5 min), then 4 min of observation.
  timeoutMs: 600_000,
  async run(ctx) {
    const { check } = ctx;
    const http = (name: string, probeKind: 'livenessProbe' | 'readinessProbe', path: string) =>
      podFor(ctx, name, {
        containers: [
          {
            name: 'web',
            image: ctx.images.httpd,
            imagePullPolicy: 'IfNotPresent',
            // The httpd image serves /www on port 80 (testkit's recipe).
            ports: [{ name: 'http', containerPort: 80 }],
            [probeKind]: { httpGet: { path, port: 'http' }, periodSeconds: 2, failureThreshold: 1 },
          },
        ],
      });

    await Promise.all([
      // exec liveness: healthy for 6s, then the probe fails and the kubelet restarts the container.
      createPod(
        ctx,
        podFor(ctx, 'liveness-exec', {
          containers: [
            sh(ctx, 'c', 'touch /tmp/healthy; sleep 6; rm -f /tmp/healthy; sleep 600', {
              livenessProbe: exec('cat /tmp/healthy', { initialDelaySeconds: 2 }),
            }),
          ],
        }),
      ),
      createPod(ctx, http('liveness-http', 'livenessProbe', '/missing')),
      createPod(ctx, http('readiness-http', 'readinessProbe', '/index.html')),
      createPod(
        ctx,
        podFor(ctx, 'readiness-tcp', {
          containers: [
            {
              name: 'web',
              image: ctx.images.httpd,
              imagePullPolicy: 'IfNotPresent',
              readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 2 },
            },
          ],
        }),
      ),
      // startup gating: liveness would fail at once, but must not run until startup succeeds (~10s).
      createPod(
        ctx,
        podFor(ctx, 'startup', {
          containers: [
            sh(ctx, 'c', 'sleep 10; touch /tmp/started; sleep 600', {
              startupProbe: exec('test -f /tmp/started', { failureThreshold: 30, periodSeconds: 1 }),
              livenessProbe: exec('test -f /tmp/started', { periodSeconds: 1 }),
              readinessProbe: exec('true', { periodSeconds: 1 }),
            }),
          ],
        }),
      ),
      // readiness toggles: ready while /tmp/ready exists, then not once the test removes it (not
      // on a timer: a loaded Docker node once took longer than a timer's 14 s to run the first probe).
      createPod(
        ctx,
        podFor(ctx, 'readiness-toggle', {
          containers: [
            sh(ctx, 'c', 'touch /tmp/ready; sleep 600', {
              readinessProbe: exec('cat /tmp/ready', { periodSeconds: 1 }),
            }),
          ],
        }),
      ),
      // a probe that outlives timeoutSeconds counts as a failure.
      createPod(
        ctx,
        podFor(ctx, 'liveness-timeout', {
          containers: [
            sh(ctx, 'c', 'sleep 600', {
              livenessProbe: exec('sleep 5', { timeoutSeconds: 1, initialDelaySeconds: 2 }),
            }),
          ],
        }),
      ),
    ]);

    const restarted = (p: Awaited<ReturnType<typeof readPod>>, c: string) =>
      (containerStatus(p, c)?.restartCount ?? 0) >= 1;
    /** RunLivenessTest: the pod leaves Pending (PodStart), then restarts within the observation window. */
    const restartsAfterStart = async (name: string, c: string, what: string) => {
      await waitForPod(
        ctx,
        name,
        'is not Pending',
        (p) => (p.status?.phase ?? 'Pending') !== 'Pending',
        POD_START_MS,
      );
      await waitForPod(ctx, name, what, (p) => restarted(p, c), OBSERVATION_MS);
    };
    await allChecks([
      (async () => {
        await restartsAfterStart('liveness-exec', 'c', 'restarts after exec liveness fails');
        const reasons = (await eventsFor(ctx, 'liveness-exec')).map((e) => e.reason);
        check.ok(
          'Unhealthy and Killing events',
          reasons.includes('Unhealthy') && reasons.includes('Killing'),
          reasons,
          ['Unhealthy', 'Killing'],
        );
      })(),
      (async () => {
        await restartsAfterStart('liveness-http', 'web', 'restarts after httpGet liveness gets 404');
        // A 404, not a refused connection: the probe reached the server and judged its answer.
        await check.eventually(
          'Unhealthy event names the 404',
          () => eventsFor(ctx, 'liveness-http'),
          (events) => events.some((e) => e.reason === 'Unhealthy' && /404/.test(e.message)),
          { timeoutMs: 30_000, expected: 'Liveness probe failed: HTTP probe failed with statuscode: 404' },
        );
      })(),
      waitForPod(
        ctx,
        'readiness-http',
        'becomes Ready via httpGet',
        (p) => podCondition(p, 'Ready') === 'True',
        POD_START_MS,
      ),
      waitForPod(
        ctx,
        'readiness-tcp',
        'becomes Ready via tcpSocket',
        (p) => podCondition(p, 'Ready') === 'True',
        POD_START_MS,
      ),
      restartsAfterStart('liveness-timeout', 'c', 'restarts when the probe times out'),
      (async () => {
        const running = await waitForPod(
          ctx,
          'startup',
          'is running',
          (p) => containerStatus(p, 'c')?.state?.running !== undefined,
        );
        const early = containerStatus(running, 'c');
        check.ok(
          'not started or ready before the startup probe succeeds',
          !(early?.started && early.ready) || (early.restartCount ?? 0) > 0,
          early,
        );
        const ok = await waitForPod(
          ctx,
          'startup',
          'is started and Ready',
          (p) => containerStatus(p, 'c')?.started === true && podCondition(p, 'Ready') === 'True',
          POD_START_MS,
        );
        check.equal(
          'startup probe held off liveness (no restart)',
          containerStatus(ok, 'c')?.restartCount,
          0,
        );
      })(),
      (async () => {
        await waitForPod(
          ctx,
          'readiness-toggle',
          'becomes Ready',
          (p) => podCondition(p, 'Ready') === 'True',
          POD_START_MS,
        );
        await execShellInContainer(ctx, 'readiness-toggle', 'c', 'rm /tmp/ready');
        const off = await waitForPod(
          ctx,
          'readiness-toggle',
          'becomes not Ready once /tmp/ready is gone',
          (p) => podCondition(p, 'Ready') === 'False',
          POD_START_SHORT_MS,
        );
        check.equal('ContainersReady follows readiness', podCondition(off, 'ContainersReady'), 'False');
        check.equal('still running while not ready', containerStatus(off, 'c')?.restartCount, 0);
      })(),
    ]);
  },
};
