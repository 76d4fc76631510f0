import type { Scenario } from '@kh/harness';
import { inCidr } from '../support/cidr.js';
import { allChecks } from '../support/concurrent.js';
import {
  containerStatus,
  createPod,
  eventsFor,
  podFor,
  sh,
  waitForPod,
  waitForRunning,
  waitingReason,
} from '../support/pods.js';

/** Pod phases, init ordering, restart policies, graceful delete with preStop, pull errors and pull secrets. */
export const podLifecycle: Scenario = {
  name: 'pod-lifecycle',
  estimateMs: 33_000,
  // Only its namespace's pods: it shares a node with other such cells.
  isolation: 'namespace',
  description:
    'pod phases and container states, init containers in order, restart policies, graceful delete with preStop, ErrImagePull/ImagePullBackOff, pull secret',
  needs: ['real-containers'],
  // Room past the 5 min pod waits (the pod helpers' PodStart default) for the rest of the cell.
  timeoutMs: 420_000,
  async run(ctx) {
    const { check } = ctx;
    const shared = { volumes: [{ name: 'data', emptyDir: {} }] };
    const mount = { volumeMounts: [{ name: 'data', mountPath: '/data' }] };
    // The private registry refuses anonymous pulls. The secret is made the way a user makes one,
    // so its key is the bare "host:port" that `--docker-server` takes.
    const secretName = 'regcred';
    const priv = ctx.registry.private;
    const secret = await ctx.kubectl([
      'create',
      'secret',
      'docker-registry',
      secretName,
      '-n',
      ctx.namespace,
      `--docker-server=${priv.host}`,
      `--docker-username=${priv.username}`,
      `--docker-password=${priv.password}`,
    ]);
    check.equal('kubectl create secret docker-registry', secret.code, 0);

    await Promise.all([
      createPod(
        ctx,
        // Long enough for Running to be posted and polled while CI's other cells (log rotation's
        // chatty pods among them) load both cores: 4 s was missed with the agent doing it right.
        podFor(ctx, 'phases', { restartPolicy: 'Never', containers: [sh(ctx, 'main', 'sleep 15; exit 0')] }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'init-order', {
          restartPolicy: 'Never',
          ...shared,
          initContainers: [
            sh(ctx, 'init-1', 'echo -n "1" >> /data/order', mount),
            sh(ctx, 'init-2', 'echo -n "2" >> /data/order', mount),
          ],
          containers: [sh(ctx, 'main', 'test "$(cat /data/order)" = "12"', mount)],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'never-fails', { restartPolicy: 'Never', containers: [sh(ctx, 'c', 'exit 3')] }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'onfailure-ok', { restartPolicy: 'OnFailure', containers: [sh(ctx, 'c', 'exit 0')] }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'onfailure-fails', {
          restartPolicy: 'OnFailure',
          containers: [sh(ctx, 'c', 'sleep 1; exit 1')],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'always-restarts', {
          restartPolicy: 'Always',
          containers: [sh(ctx, 'c', 'sleep 1; exit 0')],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'bad-image', {
          containers: [
            {
              name: 'c',
              image: `${ctx.registry.host}/kh/does-not-exist:v1`,
              imagePullPolicy: 'IfNotPresent',
            },
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'private-pull', {
          imagePullSecrets: [{ name: secretName }],
          containers: [
            { name: 'c', image: ctx.images.private, imagePullPolicy: 'Always', command: ['sleep', '600'] },
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'private-no-secret', {
          containers: [
            { name: 'c', image: ctx.images.private, imagePullPolicy: 'Always', command: ['sleep', '600'] },
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'graceful', {
          terminationGracePeriodSeconds: 20,
          containers: [
            sh(ctx, 'c', 'trap "" TERM; sleep 600', {
              lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 2'] } } },
            }),
          ],
        }),
      ),
    ]);

    await allChecks([
      // Pod phases: Pending -> Running -> Succeeded, with container states to match.
      (async () => {
        const running = await waitForRunning(ctx, 'phases');
        const runningState = containerStatus(running, 'main');
        check.ok(
          'container is running with startedAt',
          !!runningState?.state?.running?.startedAt,
          runningState?.state,
        );
        check.ok(
          'containerID names the runtime',
          /^[a-z]+:\/\/[0-9a-f]+/.test(runningState?.containerID ?? ''),
          runningState?.containerID,
        );
        check.ok('podIP set while running', !!running.status?.podIP, running.status?.podIP);
        // The runtime networks pods from the /24 the apiserver allocated to its node, as on a
        // real cluster (containerd's conf_template, the dockershim's CNI mode).
        const podCidr = (await ctx.core.readNode({ name: ctx.nodeName })).spec?.podCIDR ?? '';
        check.ok(
          "podIP lies in the node's spec.podCIDR",
          inCidr(running.status?.podIP ?? '', podCidr),
          running.status?.podIP,
          `an address in ${podCidr || 'the node spec.podCIDR (none set)'}`,
        );
        const done = await waitForPod(ctx, 'phases', 'is Succeeded', (p) => p.status?.phase === 'Succeeded');
        const term = containerStatus(done, 'main')?.state?.terminated;
        check.equal(
          'terminated reason and exit code',
          { reason: term?.reason, exitCode: term?.exitCode },
          { reason: 'Completed', exitCode: 0 },
        );
      })(),
      (async () => {
        const p = await waitForPod(
          ctx,
          'init-order',
          'Succeeded after both init containers',
          (x) => x.status?.phase === 'Succeeded' || x.status?.phase === 'Failed',
        );
        check.equal('init containers ran in order (main saw "12")', p.status?.phase, 'Succeeded');
        const i1 = containerStatus(p, 'init-1')?.state?.terminated;
        const i2 = containerStatus(p, 'init-2')?.state?.terminated;
        check.equal('init containers Completed', [i1?.reason, i2?.reason], ['Completed', 'Completed']);
        check.ok(
          'init-1 finished before init-2 started',
          new Date(i1?.finishedAt ?? 0) <= new Date(i2?.startedAt ?? 0),
          { i1: i1?.finishedAt, i2: i2?.startedAt },
        );
      })(),
      (async () => {
        const p = await waitForPod(
          ctx,
          'never-fails',
          'Failed with restartPolicy Never',
          (x) => x.status?.phase === 'Failed',
        );
        const t = containerStatus(p, 'c');
        check.equal(
          'Never: no restart, exit 3, reason Error',
          { r: t?.restartCount, code: t?.state?.terminated?.exitCode, reason: t?.state?.terminated?.reason },
          { r: 0, code: 3, reason: 'Error' },
        );
      })(),
      waitForPod(ctx, 'onfailure-ok', 'Succeeded with OnFailure', (x) => x.status?.phase === 'Succeeded'),
      waitForPod(
        ctx,
        'onfailure-fails',
        'restarts with OnFailure',
        (x) => (containerStatus(x, 'c')?.restartCount ?? 0) >= 1,
      ),
      waitForPod(
        ctx,
        'always-restarts',
        'restarts with Always even on exit 0',
        (x) => (containerStatus(x, 'c')?.restartCount ?? 0) >= 1,
      ),
      (async () => {
        await waitForPod(
          ctx,
          'bad-image',
          'shows ErrImagePull',
          (x) => waitingReason(x, 'c') === 'ErrImagePull' || waitingReason(x, 'c') === 'ImagePullBackOff',
        );
        await waitForPod(
          ctx,
          'bad-image',
          'shows ImagePullBackOff',
          (x) => waitingReason(x, 'c') === 'ImagePullBackOff',
          60_000,
        );
        // Events are recorded asynchronously, as the kubelet's are, so they may trail the status.
        await check.eventually(
          'Failed and BackOff events for the pull',
          async () => (await eventsFor(ctx, 'bad-image')).map((e) => e.reason),
          (reasons) => reasons.includes('Failed') && reasons.includes('BackOff'),
          { timeoutMs: 30_000 },
        );
      })(),
      waitForPod(
        ctx,
        'private-pull',
        'Running after pulling with a pull secret',
        (x) => x.status?.phase === 'Running',
      ),
      (async () => {
        const p = await waitForPod(
          ctx,
          'private-no-secret',
          'cannot pull from the private registry without a secret',
          (x) => waitingReason(x, 'c') === 'ErrImagePull' || waitingReason(x, 'c') === 'ImagePullBackOff',
        );
        check.equal('pod without the secret is not running', p.status?.phase, 'Pending');
        // The waiting message turns into "Back-off pulling image" later; the Failed event keeps the cause.
        await check.eventually(
          'a Failed pull event says the registry wants credentials',
          async () => (await eventsFor(ctx, 'private-no-secret')).filter((e) => e.reason === 'Failed'),
          (failed) =>
            failed.some((e) =>
              /401|unauthorized|authentication required|no basic auth credentials/i.test(e.message),
            ),
          {
            timeoutMs: 30_000,
            expected: 'a Failed event naming 401 / unauthorized / no basic auth credentials',
          },
        );
      })(),
      (async () => {
        await waitForRunning(ctx, 'graceful');
        const t0 = Date.now();
        await ctx.core.deleteNamespacedPod({ name: 'graceful', namespace: ctx.namespace });
        const marked = await ctx.core.readNamespacedPod({ name: 'graceful', namespace: ctx.namespace });
        check.ok(
          'deletionTimestamp set with the pod grace period',
          !!marked.metadata?.deletionTimestamp && marked.metadata.deletionGracePeriodSeconds === 20,
          marked.metadata,
        );
        await check.eventually(
          'pod object removed by the agent after the kill',
          async () => {
            try {
              await ctx.core.readNamespacedPod({ name: 'graceful', namespace: ctx.namespace });
              return false;
            } catch {
              return true;
            }
          },
          (gone) => gone,
          { timeoutMs: 60_000 },
        );
        const took = Date.now() - t0;
        // preStop sleeps 2s and the container ignores SIGTERM, so the kill lasts the full grace period.
        check.ok('deletion waited for preStop and the grace period', took >= 2_000, took, '>= 2000 ms');
        const reasons = (await eventsFor(ctx, 'graceful')).map((e) => e.reason);
        check.ok('Killing event', reasons.includes('Killing'), reasons);
      })(),
    ]);
  },
};
