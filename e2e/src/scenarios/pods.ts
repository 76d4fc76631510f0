import { randomBytes, randomUUID } from 'node:crypto';
import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import { PatchStrategy, setHeaderOptions, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { type ClientOptions, WebSocket } from 'ws';
import { limiter } from '../support/concurrent.js';
import {
  createPod,
  isRunning,
  POD_DELETE_MS,
  POD_START_MS,
  podCondition,
  podFor,
  podSummary,
  readPod,
  testContainerOutput,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';
import { watchPods } from '../support/watch.js';

// Upstream's pods.go (test/e2e/common/node) as named cases, side by side in one cell: host IP,
// label queries, watches and updates of a pod, activeDeadlineSeconds set on a running pod, a
// service's environment variables, exec
// and logs over WebSocket, readiness gates, deletecollection, and the pod and pod status
// lifecycle through patch, status update and status patch.
const FILE = 'test/e2e/common/node/pods.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];

type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;

/** syncLoopFrequency: how long upstream lets the kubelet act on a status patch. */
const SYNC_LOOP_FREQUENCY_MS = 10_000;

const isReady = (p: V1Pod) => podCondition(p, 'Ready') === 'True';

/** podClient.CreateSync: created, then Running. */
async function createSync(ctx: ScenarioContext, pod: V1Pod): Promise<V1Pod> {
  await createPod(ctx, pod);
  return waitForRunning(ctx, pod.metadata!.name!, POD_START_MS);
}

const listByLabel = async (ctx: ScenarioContext, labelSelector: string) =>
  (await ctx.core.listNamespacedPod({ namespace: ctx.namespace, labelSelector })).items;

/** podClient.Update: read, change, write, again on a conflict. */
async function updatePod(ctx: ScenarioContext, name: string, change: (p: V1Pod) => void): Promise<V1Pod> {
  for (let attempt = 0; ; attempt++) {
    const p = await readPod(ctx, name);
    change(p);
    try {
      return await ctx.core.replaceNamespacedPod({ name, namespace: ctx.namespace, body: p });
    } catch (err) {
      if ((err as { code?: number }).code !== 409 || attempt >= 4) throw err;
    }
  }
}

/** e2ewebsocket.OpenWebSocketForURL: the apiserver path as a WebSocket with the test's credentials. */
async function openWebSocket(ctx: ScenarioContext, path: string, protocols: string[]): Promise<WebSocket> {
  const server = ctx.kubeConfig.getCurrentCluster()?.server ?? '';
  const opts: ClientOptions = {};
  await ctx.kubeConfig.applyToHTTPSOptions(opts);
  const ws = new WebSocket(`${server.replace(/^http/, 'ws')}${path}`, protocols, opts);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) =>
      reject(new Error(`HTTP ${res.statusCode} ${res.statusMessage}`)),
    );
  });
  return ws;
}

/** Every message until the server closes the socket (websocket.Message.Receive up to io.EOF). */
function messagesUntilClose(ws: WebSocket, timeoutMs: number): Promise<Buffer[]> {
  const messages: Buffer[] = [];
  ws.on('message', (data: Buffer) => messages.push(Buffer.from(data)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`the server did not close the WebSocket within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.once('close', () => {
      clearTimeout(timer);
      resolve(messages);
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const pauseContainer = (ctx: ScenarioContext, name: string) => ({
  name,
  image: ctx.images.pause,
  imagePullPolicy: 'IfNotPresent',
});

/** A busybox `main` container that says it is alive, then sleeps (the websocket and gate cases). */
const aliveContainer = (ctx: ScenarioContext, name: string) => ({
  name,
  image: ctx.images.busybox,
  imagePullPolicy: 'IfNotPresent',
  command: ['/bin/sh', '-c', 'echo container is alive; sleep 10000'],
});

/** A pod of one container with upstream's labels, and the 30 s grace a pod gets by default. */
function labelledPod(
  ctx: ScenarioContext,
  name: string,
  labels: Record<string, string>,
  container: V1Container,
) {
  const pod = podFor(ctx, name, { containers: [container], terminationGracePeriodSeconds: 30 });
  pod.metadata!.labels = { ...pod.metadata!.labels, ...labels };
  return pod;
}

/**
 * The update cases' preamble: a pause pod labelled name=foo and time=`value`, created and Running,
 * then listed by that label.
 */
async function createLabelledPause(ctx: ScenarioContext, name: string, value: string): Promise<void> {
  await createSync(ctx, labelledPod(ctx, name, { name: 'foo', time: value }, pauseContainer(ctx, 'pause')));
  ctx.check.equal('the pod is listed by its label', (await listByLabel(ctx, `time=${value}`)).length, 1);
}

const uid = () => randomUUID();
const nanos = () => String(process.hrtime.bigint() % 1_000_000_000n);

const CASES: Case[] = [
  {
    file: FILE,
    name: 'Pods should get a host IP',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-hostip-${uid()}`;
        await createSync(ctx, podFor(ctx, name, { containers: [pauseContainer(ctx, 'test')] }));
        await ctx.check.eventually(
          `pod ${name} has a hostIP`,
          () => readPod(ctx, name),
          (p) => !!p.status?.hostIP,
          {
            timeoutMs: 120_000,
            intervalMs: 1_000,
            describe: podSummary,
          },
        );
      }),
  },
  {
    file: FILE,
    name: 'Pods should be submitted and removed',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-submit-remove-${uid()}`;
        const value = nanos();
        const selector = `time=${value}`;
        const pod = labelledPod(ctx, name, { name: 'foo', time: value }, pauseContainer(ctx, 'pause'));
        const before = await ctx.core.listNamespacedPod({
          namespace: ctx.namespace,
          labelSelector: selector,
        });
        ctx.check.equal('no pod with the label before the create', before.items.length, 0);
        // The informer's list, then its watch from that list's resourceVersion.
        const w = watchPods(ctx, {
          labelSelector: selector,
          resourceVersion: before.metadata?.resourceVersion,
        });
        try {
          await createPod(ctx, pod);
          ctx.check.equal('the pod is listed by its label', (await listByLabel(ctx, selector)).length, 1);
          const first = await w.next('the pod creation is observed', () => true, POD_START_MS);
          ctx.check.equal('the first event is ADDED', first.type, 'ADDED');
          await waitForRunning(ctx, name, POD_START_MS);
          await readPod(ctx, name);
          await ctx.core.deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 30 });
          const deleted = await w.next(
            'the pod deletion is observed',
            (e) => e.type === 'DELETED',
            POD_DELETE_MS,
          );
          ctx.check.ok('the deleted pod has a deletionTimestamp', !!deleted.pod.metadata?.deletionTimestamp);
          ctx.check.ok(
            'the deleted pod has a non-zero terminationGracePeriodSeconds',
            !!deleted.pod.spec?.terminationGracePeriodSeconds,
            deleted.pod.spec?.terminationGracePeriodSeconds,
          );
          ctx.check.equal(
            'no pod with the label after the delete',
            (await listByLabel(ctx, selector)).length,
            0,
          );
        } finally {
          w.stop();
        }
      }),
  },
  {
    file: FILE,
    name: 'Pods should be updated',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-update-${uid()}`;
        let value = nanos();
        await createLabelledPause(ctx, name, value);
        await updatePod(ctx, name, (p) => {
          value = nanos();
          p.metadata!.labels!.time = value;
        });
        await waitForRunning(ctx, name, POD_START_MS);
        ctx.check.equal(
          'the updated pod is listed by its new label',
          (await listByLabel(ctx, `time=${value}`)).length,
          1,
        );
      }),
  },
  {
    file: FILE,
    name: 'Pods should allow activeDeadlineSeconds to be updated',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-update-activedeadlineseconds-${uid()}`;
        const value = nanos();
        await createLabelledPause(ctx, name, value);
        await updatePod(ctx, name, (p) => {
          p.spec!.activeDeadlineSeconds = 5;
        });
        // WaitForPodTerminatedInNamespace: Failed with reason DeadlineExceeded.
        await waitForPod(
          ctx,
          name,
          'terminated with reason DeadlineExceeded',
          (p) => p.status?.phase === 'Failed' && p.status.reason === 'DeadlineExceeded',
          POD_START_MS,
        );
      }),
  },
  {
    file: FILE,
    name: 'Pods should contain environment variables for services',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        // Upstream's server runs agnhost serve-hostname; only its being there matters, so the
        // entrypoint image (agnhost's pause) stands in.
        const serverName = `server-envvars-${uid()}`;
        const server = podFor(ctx, serverName, {
          containers: [
            {
              name: 'srv',
              image: ctx.images.entrypoint,
              imagePullPolicy: 'IfNotPresent',
              ports: [{ containerPort: 9376 }],
            },
          ],
        });
        server.metadata!.labels = { ...server.metadata!.labels, name: serverName };
        await createSync(ctx, server);
        await ctx.core.createNamespacedService({
          namespace: ctx.namespace,
          body: {
            metadata: { name: 'fooservice', labels: { name: 'fooservice' } },
            spec: { ports: [{ port: 8765, targetPort: 8080 }], selector: { name: serverName } },
          },
        });
        const podName = `client-envvars-${uid()}`;
        const client = podFor(ctx, podName, {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'env3cont',
              image: ctx.images.busybox,
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', 'env'],
            },
          ],
        });
        client.metadata!.labels = { ...client.metadata!.labels, name: podName };
        // Upstream retries up to three times for a kubelet whose service informer lags; the
        // agent's informer gets the service from its watch before the pod's sandbox is up, so
        // once must do.
        await testContainerOutput(ctx, client, 'env3cont', [
          'FOOSERVICE_SERVICE_HOST=',
          'FOOSERVICE_SERVICE_PORT=',
          'FOOSERVICE_PORT=',
          'FOOSERVICE_PORT_8765_TCP_PORT=',
          'FOOSERVICE_PORT_8765_TCP_PROTO=',
          'FOOSERVICE_PORT_8765_TCP=',
          'FOOSERVICE_PORT_8765_TCP_ADDR=',
        ]);
      }),
  },
  {
    file: FILE,
    name: 'Pods should support remote command execution over websockets',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-exec-websocket-${uid()}`;
        const main = {
          ...aliveContainer(ctx, 'main'),
          command: ['/bin/sh', '-c', 'echo container is alive; sleep 600'],
        };
        await createSync(ctx, podFor(ctx, name, { containers: [main] }));
        const q = new URLSearchParams([
          ['stderr', '1'],
          ['stdout', '1'],
          ['container', 'main'],
          ['command', 'echo'],
          ['command', 'remote execution test'],
        ]);
        const ws = await openWebSocket(ctx, `/api/v1/namespaces/${ctx.namespace}/pods/${name}/exec?${q}`, [
          'channel.k8s.io',
        ]);
        const messages = await messagesUntilClose(ws, 60_000);
        const stdout: Buffer[] = [];
        for (const msg of messages) {
          if (msg.length === 0) continue;
          if (msg[0] !== 1) {
            // An empty message on a stream other than stdout is skipped.
            ctx.check.ok('every non-empty message is on channel 1 (stdout)', msg.length === 1, [...msg]);
            continue;
          }
          stdout.push(msg.subarray(1));
        }
        const out = Buffer.concat(stdout).toString();
        ctx.check.ok("the output has 'remote execution test'", out.includes('remote execution test'), out);
      }),
  },
  {
    file: FILE,
    name: 'Pods should support retrieving logs from the container over websockets',
    tags: CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-logs-websocket-${uid()}`;
        await createSync(ctx, podFor(ctx, name, { containers: [aliveContainer(ctx, 'main')] }));
        const ws = await openWebSocket(
          ctx,
          `/api/v1/namespaces/${ctx.namespace}/pods/${name}/log?container=main`,
          ['binary.k8s.io'],
        );
        const messages = await messagesUntilClose(ws, 60_000);
        const log = messages
          .filter((m) => m.toString().trim() !== '')
          .map((m) => m.toString())
          .join('');
        ctx.check.equal('the websocket log', log, 'container is alive\n');
      }),
  },
  {
    file: FILE,
    name: 'Pods should support pod readiness gates',
    tags: ['NodeConformance'],
    run: (ctx, limit) =>
      limit(async () => {
        const name = 'pod-ready';
        const gate1 = 'k8s.io/test-condition1';
        const gate2 = 'k8s.io/test-condition2';
        const pod = labelledPod(
          ctx,
          name,
          { test: 'pod-readiness-gate' },
          aliveContainer(ctx, 'pod-readiness-gate'),
        );
        pod.spec!.terminationGracePeriodSeconds = 5;
        pod.spec!.readinessGates = [{ conditionType: gate1 }, { conditionType: gate2 }];
        const patchGate = (type: string, status: string) =>
          ctx.core.patchNamespacedPodStatus(
            { name, namespace: ctx.namespace, body: { status: { conditions: [{ type, status }] } } },
            setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
          );
        const validateReadiness = (expectReady: boolean) =>
          ctx.check.eventually(
            `pod ${name} Ready is ${expectReady}`,
            () => readPod(ctx, name),
            (p) => isReady(p) === expectReady,
            {
              timeoutMs: 60_000,
              intervalMs: 1_000,
              describe: podSummary,
            },
          );
        await createSync(ctx, pod);
        ctx.check.ok("the pod's Ready condition is false initially", !isReady(await readPod(ctx, name)));
        await patchGate(gate1, 'True');
        await new Promise((r) => setTimeout(r, SYNC_LOOP_FREQUENCY_MS));
        const oneGate = await readPod(ctx, name);
        ctx.check.ok(
          "the pod's Ready condition is false with only one readiness gate True",
          !isReady(oneGate),
          podSummary(oneGate),
        );
        await patchGate(gate2, 'True');
        await validateReadiness(true);
        await patchGate(gate1, 'False');
        await validateReadiness(false);
      }),
  },
  {
    file: FILE,
    name: 'Pods should delete a collection of pods',
    tags: ['Conformance'],
    run: (ctx, limit) =>
      limit(async () => {
        const names = ['test-pod-1', 'test-pod-2', 'test-pod-3'];
        for (const name of names) {
          const pod = podFor(ctx, name, {
            terminationGracePeriodSeconds: 1,
            restartPolicy: 'Never',
            containers: [
              { name: 'token-test', image: ctx.images.entrypoint, imagePullPolicy: 'IfNotPresent' },
            ],
          });
          pod.metadata!.labels = { ...pod.metadata!.labels, type: 'Testing' };
          await createPod(ctx, pod);
        }
        // WaitForPodsRunningReady: all three Running and Ready.
        await ctx.check.eventually(
          '3 pods running and ready',
          () => listByLabel(ctx, 'type=Testing'),
          (pods) => pods.length === 3 && pods.every((p) => isRunning(p) && isReady(p)),
          {
            timeoutMs: POD_START_MS,
            intervalMs: 1_000,
            describe: (pods) => pods.map((p) => [p.metadata?.name, p.status?.phase]),
          },
        );
        await ctx.core.deleteCollectionNamespacedPod({
          namespace: ctx.namespace,
          labelSelector: 'type=Testing',
          gracePeriodSeconds: 1,
        });
        await ctx.check.eventually(
          'all pods deleted',
          () => listByLabel(ctx, 'type=Testing'),
          (pods) => pods.length === 0,
          {
            timeoutMs: POD_DELETE_MS,
            intervalMs: 1_000,
            describe: (pods) => pods.map((p) => p.metadata?.name),
          },
        );
      }),
  },
  {
    file: FILE,
    name: 'Pods should run through the lifecycle of Pods and PodStatus',
    tags: ['Conformance'],
    run: (ctx, limit) =>
      limit(async () => {
        const name = 'pod-test';
        const selector = 'test-pod-static=true';
        const image2 = ctx.images.httpd;
        const list = await ctx.core.listPodForAllNamespaces({ labelSelector: selector });
        const w = watchPods(ctx, {
          labelSelector: selector,
          resourceVersion: list.metadata?.resourceVersion,
        });
        try {
          const pod = podFor(ctx, name, {
            terminationGracePeriodSeconds: 1,
            containers: [{ name, image: ctx.images.entrypoint, imagePullPolicy: 'IfNotPresent' }],
          });
          pod.metadata!.labels = { ...pod.metadata!.labels, 'test-pod-static': 'true' };
          await createPod(ctx, pod);
          await w.next(
            'the pod is seen running',
            (e) =>
              e.pod.metadata?.name === name &&
              e.pod.metadata.labels?.['test-pod-static'] === 'true' &&
              isRunning(e.pod),
            POD_START_MS,
          );
          const p = await readPod(ctx, name);
          ctx.check.equal('the pod is Running', p.status?.phase, 'Running');
          const seen = w.events.length;
          await ctx.core.patchNamespacedPod(
            {
              name,
              namespace: ctx.namespace,
              body: {
                metadata: { labels: { 'test-pod': 'patched' } },
                spec: { terminationGracePeriodSeconds: 1, containers: [{ name, image: image2 }] },
              },
            },
            setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
          );
          await w.next('the patch is seen', (e) => e.type === 'MODIFIED', 30_000, seen);
          const patched = await readPod(ctx, name);
          ctx.check.equal('the patched label', patched.metadata?.labels?.['test-pod'], 'patched');
          ctx.check.equal('the patched image', patched.spec?.containers[0]?.image, image2);

          // RetryOnConflict: the status read again when the update conflicts.
          let updated: V1Pod | undefined;
          for (let attempt = 0; updated === undefined; attempt++) {
            const status = await ctx.core.readNamespacedPodStatus({ name, namespace: ctx.namespace });
            let flipped = 0;
            for (const c of status.status?.conditions ?? []) {
              if ((c.type === 'Ready' || c.type === 'ContainersReady') && c.status === 'True') {
                c.status = 'False';
                flipped++;
              }
            }
            ctx.check.equal('the Ready and ContainersReady conditions to flip', flipped, 2);
            try {
              updated = await ctx.core.replaceNamespacedPodStatus({
                name,
                namespace: ctx.namespace,
                body: status,
              });
            } catch (err) {
              if ((err as { code?: number }).code !== 409 || attempt >= 4) throw err;
            }
          }
          const falseNow = (updated.status?.conditions ?? []).filter(
            (c) => (c.type === 'Ready' || c.type === 'ContainersReady') && c.status === 'False',
          );
          ctx.check.equal('the updated status has Ready and ContainersReady False', falseNow.length, 2);

          const before = w.events.length;
          await ctx.core.deleteCollectionNamespacedPod({
            namespace: ctx.namespace,
            labelSelector: selector,
            gracePeriodSeconds: 1,
          });
          await w.next('the pod deletion is seen', (e) => e.type === 'DELETED', POD_DELETE_MS, before);
          const gone = await readPod(ctx, name).then(
            () => 200,
            (err: { code?: number }) => err.code,
          );
          ctx.check.equal('reading the deleted pod is NotFound', gone, 404);
        } finally {
          w.stop();
        }
      }),
  },
  {
    file: FILE,
    name: 'Pods should patch a pod status',
    tags: ['Conformance'],
    run: (ctx, limit) =>
      limit(async () => {
        const name = `pod-${randomBytes(4).toString('hex').slice(0, 5)}`;
        const pod = podFor(ctx, name, {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'agnhost', image: ctx.images.entrypoint, imagePullPolicy: 'IfNotPresent' }],
        });
        pod.metadata!.labels = { ...pod.metadata!.labels, e2e: name };
        await createPod(ctx, pod);
        await waitForRunning(ctx, name, POD_START_MS);
        const patched = await ctx.core.patchNamespacedPodStatus(
          {
            name,
            namespace: ctx.namespace,
            body: {
              metadata: { annotations: { patchedstatus: 'true' } },
              status: { message: 'Patched by e2e test', reason: 'E2E' },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        ctx.check.equal('Status.Message', patched.status?.message, 'Patched by e2e test');
        ctx.check.equal('Status.Reason', patched.status?.reason, 'E2E');
      }),
  },
];

export const pods: CasesScenario<Limit> = {
  name: 'pods',
  estimateMs: 60_000,
  isolation: 'namespace',
  description:
    'pods.go cases: host IP, label queries, watches and updates, activeDeadlineSeconds set on a running pod, service environment variables, exec and logs over WebSocket, readiness gates, deletecollection, and the pod status lifecycle (update, patch)',
  needs: ['real-containers'],
  timeoutMs: 420_000,
  setup: async () => limiter(6),
  cases: CASES,
};
