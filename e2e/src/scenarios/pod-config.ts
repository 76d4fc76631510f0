import { Quantity } from '@kh/apimachinery';
import type { Scenario, ScenarioContext } from '@kh/harness';
import { AuthenticationV1Api, type V1Pod } from '@kubernetes/client-node';
import { allChecks } from '../support/concurrent.js';
import {
  containerStatus,
  createPod,
  eventsFor,
  finished,
  POD_START_MS,
  podFor,
  podLog,
  podSummary,
  sh,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';

/** How long a pod whose config map is missing is watched not to start, before the map appears. */
const BLOCKED_MS = 30_000;

/** Keys are valid shell names: sh drops variables like data-1 from the environment it passes on. */
const CM = 'cfg';
const SECRET = 'sec';

/** Every pod here logs from its container `c`. */
const logs = (ctx: ScenarioContext, name: string) => podLog(ctx, name, 'c');

const lineSet = (log: string) => new Set(log.split('\n').map((l) => l.trim()));

/** Waits until a running pod's log has every line in `lines`; records the log on failure. */
async function expectOutput(ctx: ScenarioContext, pod: string, what: string, lines: string[]) {
  const have = (log: string) => {
    const got = lineSet(log);
    return lines.every((l) => got.has(l.trim()));
  };
  await ctx.check.eventually(`pod ${pod}: ${what}`, () => logs(ctx, pod).catch(() => ''), have, {
    timeoutMs: POD_START_MS,
    intervalMs: 1_000,
    expected: lines,
  });
}

/** A finished pod's log has every line in `lines`: the ones it lacks are recorded, with the log. */
async function finishedOutput(ctx: ScenarioContext, pod: string, what: string, lines: string[]) {
  const log = await logs(ctx, pod);
  const got = lineSet(log);
  const missing = lines.filter((l) => !got.has(l.trim()));
  ctx.check.ok(`pod ${pod}: ${what}`, missing.length === 0, { missing, log }, lines);
}

const done = (ctx: ScenarioContext, name: string) =>
  waitForPod(ctx, name, 'Succeeded', finished, POD_START_MS);

const waiting = (p: V1Pod) => containerStatus(p, 'c')?.state?.waiting;

/**
 * A pod whose config map is missing: waits with `reason` (and the kubelet's `message` when it has
 * one), does not start while the map is missing, and starts in place once it exists.
 */
async function blockedUntilCreated(
  ctx: ScenarioContext,
  pod: string,
  configMap: string,
  reason: string,
  message: RegExp,
): Promise<void> {
  // Before its first sync a container waits as ContainerCreating without a message: wait for the message.
  await waitForPod(
    ctx,
    pod,
    `waits with ${reason}: ${message}`,
    (p) => waiting(p)?.reason === reason && message.test(waiting(p)?.message ?? ''),
  );
  const deadline = performance.now() + BLOCKED_MS;
  while (performance.now() < deadline) {
    const p = await ctx.core.readNamespacedPod({ name: pod, namespace: ctx.namespace });
    if (p.status?.phase !== 'Pending' || containerStatus(p, 'c')?.state?.running) {
      ctx.check.ok(
        `pod ${pod}: stays Pending while configmap "${configMap}" is missing`,
        false,
        podSummary(p),
      );
    }
    await ctx.sleep(2_000);
  }
  ctx.check.ok(`pod ${pod}: stays Pending while configmap "${configMap}" is missing`, true);
  await ctx.core.createNamespacedConfigMap({
    namespace: ctx.namespace,
    body: { metadata: { name: configMap }, data: { LATE: 'arrived' } },
  });
  const running = await waitForPod(
    ctx,
    pod,
    'Running once the config map exists',
    (p) => p.status?.phase === 'Running',
    POD_START_MS,
  );
  ctx.check.equal(
    `pod ${pod}: its first container started, no restart`,
    containerStatus(running, 'c')?.restartCount,
    0,
  );
}

/** The upstream cases this scenario mirrors end to end, by file (kubernetes/kubernetes). */
const UPSTREAM: Record<string, string[]> = {
  'test/e2e/common/storage/downwardapi_volume.go': [
    'Downward API volume should provide podname only',
    'Downward API volume should update labels on modification',
  ],
  'test/e2e/common/storage/projected_combined.go': [
    'Projected combined should project all components that make up the projection API',
  ],
};

/**
 * The downward API and service account tokens reach containers as the kubelet delivers them: env
 * (valueFrom, $(VAR) expansion) and volumes (downwardAPI, projected) with their updates, an API
 * volume read-only whatever its mount asks (the configmap and secrets scenarios have upstream's
 * config map and secret cases); a missing config map blocks the container (CreateContainerConfigError for env, ContainerCreating
 * for a volume) until it is created.
 */
export const podConfig: Scenario = {
  name: 'pod-config',
  estimateMs: 50_000,
  // Only its namespace's pods: it shares a node with other such cells.
  isolation: 'namespace',
  description:
    'downwardAPI/projected volumes and valueFrom/$(VAR) env as upstream downwardapi, expansion and projected cases check them; an API volume is read-only whatever its mount asks; a missing configMap blocks the container until it exists',
  needs: ['real-containers'],
  // Room past upstream's 5 min waits for a pod's output (PodStart) for the rest of the cell.
  timeoutMs: 480_000,
  upstream: Object.entries(UPSTREAM).flatMap(([file, cases]) => cases.map((c) => ({ file, case: c }))),
  async run(ctx) {
    const { check, namespace } = ctx;
    await ctx.core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: CM },
        data: { data_1: 'value-1', data_2: 'value-2' },
      },
    });
    await ctx.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: SECRET }, stringData: { data_1: 'secret-1' } },
    });
    const resources = { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '1250m', memory: '64Mi' } };
    const res = (name: string, resource: string) => ({ name, valueFrom: { resourceFieldRef: { resource } } });
    const field = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });

    await Promise.all([
      createPod(
        ctx,
        podFor(ctx, 'env', {
          restartPolicy: 'Never',
          containers: [
            sh(ctx, 'c', 'env | sort; echo "command: $(FOOBAR)"', {
              resources,
              env: [
                field('POD_NAME', 'metadata.name'),
                field('POD_NAMESPACE', 'metadata.namespace'),
                field('POD_IP', 'status.podIP'),
                field('HOST_IP', 'status.hostIP'),
                field('POD_UID', 'metadata.uid'),
                res('CPU_LIMIT', 'limits.cpu'),
                res('MEMORY_LIMIT', 'limits.memory'),
                res('CPU_REQUEST', 'requests.cpu'),
                res('MEMORY_REQUEST', 'requests.memory'),
                { name: 'FOO', value: 'foo-value' },
                { name: 'BAR', value: 'bar-value' },
                { name: 'FOOBAR', value: '$(FOO);;$(BAR)' },
              ],
            }),
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'env-defaults', {
          restartPolicy: 'Never',
          containers: [
            sh(ctx, 'c', 'env | sort', {
              env: [res('CPU_LIMIT', 'limits.cpu'), res('MEMORY_LIMIT', 'limits.memory')],
            }),
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'env-args', {
          restartPolicy: 'Never',
          containers: [
            {
              ...sh(ctx, 'c', ''),
              command: ['sh', '-c'],
              args: ['echo "args: $(TEST_VAR)"'],
              env: [{ name: 'TEST_VAR', value: 'test-value' }],
            },
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'volumes', {
          // The container loops so that updates to the labels show in its log.
          containers: [
            sh(
              ctx,
              'c',
              `echo "podname: $(cat /etc/podinfo/podname)"
echo "projected: $(cat /etc/projected/cm-data_1) $(cat /etc/projected/secret-data_1) $(cat /etc/projected/podname)"
echo "token: $(cat /etc/projected/token)"
touch /etc/cfg/new 2>/dev/null && echo "cfg: writable" || echo "cfg: read-only"
while true; do echo "labels: $(cat /etc/podinfo/labels | tr '\\n' ' ')"; sleep 2; done`,
              {
                volumeMounts: [
                  { name: 'cfg', mountPath: '/etc/cfg' },
                  { name: 'podinfo', mountPath: '/etc/podinfo' },
                  { name: 'projected', mountPath: '/etc/projected' },
                ],
              },
            ),
          ],
          volumes: [
            { name: 'cfg', configMap: { name: CM } },
            {
              name: 'podinfo',
              downwardAPI: {
                items: [
                  { path: 'podname', fieldRef: { fieldPath: 'metadata.name' } },
                  { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                ],
              },
            },
            {
              name: 'projected',
              projected: {
                sources: [
                  { configMap: { name: CM, items: [{ key: 'data_1', path: 'cm-data_1' }] } },
                  { secret: { name: SECRET, items: [{ key: 'data_1', path: 'secret-data_1' }] } },
                  { downwardAPI: { items: [{ path: 'podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
                  { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
                ],
              },
            },
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'missing-env', {
          containers: [
            sh(ctx, 'c', 'echo "late: $LATE"; sleep 600', {
              envFrom: [{ configMapRef: { name: 'late-env' } }],
            }),
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'missing-key', {
          containers: [
            sh(ctx, 'c', 'sleep 600', {
              env: [{ name: 'NOPE', valueFrom: { configMapKeyRef: { name: CM, key: 'nope' } } }],
            }),
          ],
        }),
      ),
      createPod(
        ctx,
        podFor(ctx, 'missing-volume', {
          containers: [
            sh(ctx, 'c', 'cat /etc/late/LATE; sleep 600', {
              volumeMounts: [{ name: 'late', mountPath: '/etc/late' }],
            }),
          ],
          volumes: [{ name: 'late', configMap: { name: 'late-volume' } }],
        }),
      ),
    ]);

    await allChecks([
      (async () => {
        const p = await done(ctx, 'env');
        check.equal('pod env: Succeeded', p.status?.phase, 'Succeeded');
        await finishedOutput(ctx, 'env', 'sees pod fields, resources and expanded vars', [
          'POD_NAME=env',
          `POD_NAMESPACE=${namespace}`,
          `POD_IP=${p.status?.podIP}`,
          `HOST_IP=${p.status?.hostIP}`,
          `POD_UID=${p.metadata?.uid}`,
          'CPU_LIMIT=2',
          `MEMORY_LIMIT=${64 * 1024 * 1024}`,
          'CPU_REQUEST=1',
          `MEMORY_REQUEST=${32 * 1024 * 1024}`,
          'FOOBAR=foo-value;;bar-value',
          'command: foo-value;;bar-value',
        ]);
      })(),
      (async () => {
        await done(ctx, 'env-defaults');
        const node = await ctx.core.readNode({ name: ctx.nodeName });
        const alloc = node.status?.allocatable ?? {};
        await finishedOutput(ctx, 'env-defaults', 'sees the node allocatable as its unset limits', [
          // Divisor 1: cpu rounds up to whole cores, memory is in bytes.
          `CPU_LIMIT=${(Quantity.fromJSON(alloc.cpu ?? '0').milliValue() + 999n) / 1000n}`,
          `MEMORY_LIMIT=${Quantity.fromJSON(alloc.memory ?? '0').value()}`,
        ]);
      })(),
      (async () => {
        await done(ctx, 'env-args');
        await finishedOutput(ctx, 'env-args', 'args expanded', ['args: test-value']);
      })(),
      (async () => {
        await waitForRunning(ctx, 'volumes', POD_START_MS);
        await expectOutput(ctx, 'volumes', 'reads every volume with its modes', [
          'podname: volumes',
          'projected: value-1 secret-1 volumes',
          'cfg: read-only',
        ]);
        // The projected token is the pod's service account, bound to the pod: TokenReview says so.
        const token =
          (await logs(ctx, 'volumes'))
            .split('\n')
            .find((l) => l.startsWith('token: '))
            ?.slice(7) ?? '';
        const review = await ctx.kubeConfig
          .makeApiClient(AuthenticationV1Api)
          .createTokenReview({ body: { spec: { token } } });
        check.equal(
          'projected token authenticates as the pod service account',
          review.status?.user?.username,
          `system:serviceaccount:${namespace}:default`,
        );
        // Updates: a new label reaches the mounted file.
        await ctx.core.patchNamespacedPod({
          namespace,
          name: 'volumes',
          body: [{ op: 'add', path: '/metadata/labels/updated', value: 'yes' }],
        });
        await ctx.check.eventually(
          'pod volumes: sees the new label',
          () => logs(ctx, 'volumes'),
          (log) => log.includes('updated="yes"'),
          { timeoutMs: POD_START_MS, intervalMs: 1_000, expected: 'updated="yes" in the labels file' },
        );
      })(),
      blockedUntilCreated(
        ctx,
        'missing-env',
        'late-env',
        'CreateContainerConfigError',
        /^configmap "late-env" not found$/,
      ),
      (async () => {
        const p = await waitForPod(
          ctx,
          'missing-key',
          'waits with CreateContainerConfigError',
          (x) => waiting(x)?.reason === 'CreateContainerConfigError',
        );
        check.equal(
          'pod missing-key: the kubelet message',
          waiting(p)?.message,
          `couldn't find key nope in ConfigMap ${namespace}/${CM}`,
        );
      })(),
      (async () => {
        await blockedUntilCreated(
          ctx,
          'missing-volume',
          'late-volume',
          'ContainerCreating',
          /^MountVolume\.SetUp failed for volume "late" : configmap "late-volume" not found$/,
        );
        const events = await eventsFor(ctx, 'missing-volume');
        check.ok(
          'pod missing-volume: a warning event names the missing config map',
          events.some((e) => e.type === 'Warning' && e.message.includes('configmap "late-volume" not found')),
          events,
        );
      })(),
    ]);
    await expectOutput(ctx, 'missing-env', 'sees the config map that arrived', ['late: arrived']);
  },
};
