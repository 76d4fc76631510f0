import {
  type CasesScenario,
  PRECONFIGURED_RUNTIME_HANDLER,
  type ScenarioCase,
  type ScenarioContext,
} from '@kh/harness';
import {
  ApisApi,
  NodeApi,
  NodeV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1RuntimeClass,
  Watch,
} from '@kubernetes/client-node';
import { refusal } from '../support/api-status.js';
import { eventsFor, POD_EVENT_MS, readPod, waitForSuccess } from '../support/pods.js';

// Upstream's runtimeclass.go (test/e2e/common/node), one named case per It, side by side in one
// cell. RuntimeClasses are cluster-wide, so each case names its own after its namespace, as
// upstream's createRuntimeClass does; the cases that list "the one pod in the namespace" get a
// namespace of their own, as every upstream It has.
const FILE = 'test/e2e/common/node/runtimeclass.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
const RUNTIME_HANDLER = ['NodeFeature:RuntimeHandler'];

/** ContainerStatusRetryTimeout and ContainerStatusPollInterval. */
const STATUS_RETRY_MS = 5 * 60_000;
const STATUS_POLL_MS = 1_000;
/** wait.ForeverTestTimeout. */
const FOREVER_TEST_TIMEOUT_MS = 30_000;

type Case = ScenarioCase<void>;

const nodeV1 = (ctx: ScenarioContext) => ctx.kubeConfig.makeApiClient(NodeV1Api);

/**
 * e2eruntimeclass.NewRuntimeClassPod: busybox running `true`, never restarted, no service account
 * token. The scheduler places it, kept to this cell's node by its hostname label.
 */
function runtimeClassPod(ctx: ScenarioContext, namespace: string, runtimeClassName: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: `test-runtimeclass-${runtimeClassName}-`, namespace },
    spec: {
      runtimeClassName,
      nodeSelector: { 'kubernetes.io/hostname': ctx.nodeName },
      containers: [
        { name: 'test', image: ctx.images.busybox, imagePullPolicy: 'IfNotPresent', command: ['true'] },
      ],
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
    },
  };
}

const createRuntimeClassPod = (ctx: ScenarioContext, namespace: string, rcName: string) =>
  ctx.core.createNamespacedPod({ namespace, body: runtimeClassPod(ctx, namespace, rcName) });

/** createRuntimeClass: `<namespace>-<name>` with the handler (and overhead); returns its name. */
async function createRuntimeClass(
  ctx: ScenarioContext,
  namespace: string,
  name: string,
  handler: string,
  overhead?: V1RuntimeClass['overhead'],
): Promise<string> {
  const rc = await nodeV1(ctx).createRuntimeClass({
    body: { metadata: { name: `${namespace}-${name}` }, handler, ...(overhead ? { overhead } : {}) },
  });
  return rc.metadata?.name ?? '';
}

/** The class is deleted at the case's end whatever happened (upstream's DeferCleanup). */
async function withRuntimeClass(
  ctx: ScenarioContext,
  rcName: string,
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body();
  } finally {
    await nodeV1(ctx).deleteRuntimeClass({ name: rcName });
  }
}

/** expectPodRejection: a dry-run create of a pod of the class is refused as Forbidden. */
async function podRejection(ctx: ScenarioContext, rcName: string) {
  return refusal(
    ctx.core.createNamespacedPod({
      namespace: ctx.namespace,
      body: runtimeClassPod(ctx, ctx.namespace, rcName),
      dryRun: 'All',
    }),
  );
}

const forbidden = (r: { code?: number; reason?: string }) => r.code === 403 && r.reason === 'Forbidden';

/**
 * The "should schedule" cases: the pod of the class in a namespace of its own is scheduled
 * (e2epod.WaitForPodsWithLabelScheduled over every pod there); returns it.
 */
async function scheduledAlone(ctx: ScenarioContext, namespace: string, created: V1Pod): Promise<V1Pod> {
  const pods = await ctx.check.eventually(
    'every pod of the namespace scheduled',
    async () => (await ctx.core.listNamespacedPod({ namespace })).items,
    (items) => items.length > 0 && items.every((p) => !!p.spec?.nodeName),
    { timeoutMs: 120_000, describe: (items) => items.map((p) => [p.metadata?.name, p.spec?.nodeName]) },
  );
  ctx.check.equal('pods in the namespace', pods.length, 1);
  ctx.check.equal('the scheduled pod is the one created', pods[0]?.metadata?.name, created.metadata?.name);
  return pods[0] as V1Pod;
}

/**
 * The two scheduling cases: in a namespace of its own (`suffix`), a pod of a new class on the
 * preconfigured handler (with `overhead`) is scheduled alone; `check` looks at that pod.
 */
async function scheduledWithClass(
  ctx: ScenarioContext,
  suffix: string,
  overhead: V1RuntimeClass['overhead'] | undefined,
  check: (pod: V1Pod) => void,
): Promise<void> {
  const namespace = await ctx.createNamespace(suffix);
  const rcName = await createRuntimeClass(
    ctx,
    namespace,
    'preconfigured-handler',
    PRECONFIGURED_RUNTIME_HANDLER,
    overhead,
  );
  await withRuntimeClass(ctx, rcName, async () => {
    check(await scheduledAlone(ctx, namespace, await createRuntimeClassPod(ctx, namespace, rcName)));
  });
}

const CASES: Case[] = [
  {
    file: FILE,
    name: 'RuntimeClass should reject a Pod requesting a non-existent RuntimeClass',
    tags: CONFORMANCE,
    async run(ctx) {
      const r = await podRejection(ctx, `${ctx.namespace}-nonexistent`);
      ctx.check.ok('pod rejected as Forbidden', forbidden(r), r, { code: 403, reason: 'Forbidden' });
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should reject a Pod requesting a RuntimeClass with an unconfigured handler',
    tags: RUNTIME_HANDLER,
    async run(ctx) {
      const handler = `${ctx.namespace}-handler`;
      const rcName = await createRuntimeClass(ctx, ctx.namespace, 'unconfigured-handler', handler);
      await withRuntimeClass(ctx, rcName, async () => {
        const pod = await createRuntimeClassPod(ctx, ctx.namespace, rcName);
        const name = pod.metadata?.name ?? '';
        // Upstream only waits for the event (to be quick) and logs its absence; the agent does
        // record it, with the runtime's error naming the handler.
        await ctx.check.eventually(
          `FailedCreatePodSandBox event for ${name} naming handler ${handler}`,
          () => eventsFor(ctx, name),
          (events) =>
            events.some((e) => e.reason === 'FailedCreatePodSandBox' && e.message.includes(handler)),
          { timeoutMs: POD_EVENT_MS, intervalMs: 1_000 },
        );
        const p = await readPod(ctx, name);
        ctx.check.equal(`pod ${name} phase`, p.status?.phase, 'Pending');
      });
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should run a Pod requesting a RuntimeClass with a configured handler',
    tags: RUNTIME_HANDLER,
    async run(ctx) {
      const rcName = await createRuntimeClass(
        ctx,
        ctx.namespace,
        'preconfigured-handler',
        PRECONFIGURED_RUNTIME_HANDLER,
      );
      await withRuntimeClass(ctx, rcName, async () => {
        const pod = await createRuntimeClassPod(ctx, ctx.namespace, rcName);
        await waitForSuccess(ctx, pod.metadata?.name ?? '');
      });
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should schedule a Pod requesting a RuntimeClass without PodOverhead',
    tags: CONFORMANCE,
    async run(ctx) {
      await scheduledWithClass(ctx, 'no-overhead', undefined, (pod) =>
        ctx.check.equal('spec.overhead', pod.spec?.overhead ?? {}, {}),
      );
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should schedule a Pod requesting a RuntimeClass and initialize its Overhead',
    tags: CONFORMANCE,
    async run(ctx) {
      await scheduledWithClass(ctx, 'overhead', { podFixed: { cpu: '10m', memory: '1Mi' } }, (pod) => {
        ctx.check.equal('spec.overhead[cpu]', pod.spec?.overhead?.cpu, '10m');
        ctx.check.equal('spec.overhead[memory]', pod.spec?.overhead?.memory, '1Mi');
      });
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should reject a Pod requesting a deleted RuntimeClass',
    tags: CONFORMANCE,
    async run(ctx) {
      const rcName = await createRuntimeClass(ctx, ctx.namespace, 'delete-me', 'runc');
      const api = nodeV1(ctx);
      await api.deleteRuntimeClass({ name: rcName });
      await ctx.check.eventually(
        `RuntimeClass ${rcName} gone`,
        () => refusal(api.readRuntimeClass({ name: rcName })),
        (r) => r.code === 404,
        { timeoutMs: 60_000, intervalMs: 2_000 },
      );
      await ctx.check.eventually(
        `a pod of the deleted RuntimeClass ${rcName} is rejected as Forbidden`,
        () => podRejection(ctx, rcName),
        forbidden,
        { timeoutMs: STATUS_RETRY_MS, intervalMs: STATUS_POLL_MS },
      );
    },
  },
  {
    file: FILE,
    name: 'RuntimeClass should support RuntimeClasses API operations',
    tags: ['Conformance'],
    run: apiOperations,
  },
];

/** Discovery, then create, watch, get, list, patch, update, delete and deletecollection. */
async function apiOperations(ctx: ScenarioContext): Promise<void> {
  const { check } = ctx;
  const api = nodeV1(ctx);
  const unique = ctx.namespace;
  const selector = `test=${unique}`;
  // runtimeclasstest.NewRuntimeClass with opaque handlers no runtime has.
  const rc = (suffix: string): V1RuntimeClass => ({
    metadata: { name: `${unique}-conformance-runtime-class${suffix}`, labels: { test: unique } },
    handler: `${unique}-handler${suffix}`,
  });

  const groups = await ctx.kubeConfig.makeApiClient(ApisApi).getAPIVersions();
  check.ok(
    '/apis lists node.k8s.io/v1',
    groups.groups.some((g) => g.name === 'node.k8s.io' && g.versions.some((v) => v.version === 'v1')),
    groups.groups.map((g) => g.name),
  );
  const group = await ctx.kubeConfig.makeApiClient(NodeApi).getAPIGroup();
  check.ok(
    '/apis/node.k8s.io lists v1',
    group.versions.some((v) => v.version === 'v1'),
    group.versions,
  );
  const resources = await api.getAPIResources();
  check.ok(
    '/apis/node.k8s.io/v1 lists runtimeclasses',
    resources.resources.some((r) => r.name === 'runtimeclasses'),
    resources.resources.map((r) => r.name),
  );

  const created = await api.createRuntimeClass({ body: rc('') });
  const again = await refusal(api.createRuntimeClass({ body: rc('') }));
  check.equal('creating it again: 409 AlreadyExists', [again.code, again.reason], [409, 'AlreadyExists']);
  await api.createRuntimeClass({ body: rc('2') });

  const events: { type: string; obj: V1RuntimeClass }[] = [];
  const watch = await new Watch(ctx.kubeConfig).watch(
    '/apis/node.k8s.io/v1/runtimeclasses',
    { labelSelector: selector },
    (type, obj: V1RuntimeClass) => events.push({ type, obj }),
    () => {},
  );
  try {
    await api.createRuntimeClass({ body: rc('3') });

    const gotten = await api.readRuntimeClass({ name: created.metadata?.name ?? '' });
    check.equal('get: the uid created', gotten.metadata?.uid, created.metadata?.uid);
    check.equal('list: 3 classes', (await api.listRuntimeClass({ labelSelector: selector })).items.length, 3);

    const patched = await api.patchRuntimeClass(
      { name: created.metadata?.name ?? '', body: { metadata: { annotations: { patched: 'true' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    check.equal('patched annotation', patched.metadata?.annotations?.patched, 'true');
    const toUpdate = structuredClone(patched);
    toUpdate.metadata = {
      ...toUpdate.metadata,
      annotations: { ...toUpdate.metadata?.annotations, updated: 'true' },
    };
    const updated = await api.replaceRuntimeClass({ name: toUpdate.metadata?.name ?? '', body: toUpdate });
    check.equal('updated annotation', updated.metadata?.annotations?.updated, 'true');

    // Upstream stops at the first of these; each of them is awaited here.
    const annotated = (key: string) => (e: { type: string; obj: V1RuntimeClass }) =>
      e.type === 'MODIFIED' && e.obj.metadata?.annotations?.[key] === 'true';
    await check.eventually(
      'watch saw ADDED, the patch and the update',
      async () => events,
      (seen) =>
        seen.some((e) => e.type === 'ADDED') &&
        seen.some((e) => annotated('patched')(e) && !annotated('updated')(e)) &&
        seen.some(annotated('updated')),
      {
        timeoutMs: FOREVER_TEST_TIMEOUT_MS,
        intervalMs: 200,
        describe: (seen) => seen.map((e) => [e.type, e.obj.metadata?.name, e.obj.metadata?.annotations]),
      },
    );
  } finally {
    watch.abort();
  }

  await api.deleteRuntimeClass({ name: created.metadata?.name ?? '' });
  const gone = await refusal(api.readRuntimeClass({ name: created.metadata?.name ?? '' }));
  check.equal('get after delete: 404', gone.code, 404);
  check.equal('list: 2 classes', (await api.listRuntimeClass({ labelSelector: selector })).items.length, 2);

  await api.deleteCollectionRuntimeClass({ labelSelector: selector });
  check.equal(
    'list after deletecollection: none',
    (await api.listRuntimeClass({ labelSelector: selector })).items.length,
    0,
  );
}

export const runtimeClass: CasesScenario<void> = {
  name: 'runtimeclass',
  estimateMs: 10_000,
  isolation: 'namespace',
  description:
    "runtimeclass.go: RuntimeClass admission (a missing or deleted class is Forbidden, the class's overhead set on the pod), a class whose handler the runtime lacks leaves its pod Pending with FailedCreatePodSandBox, a pod on upstream's test-handler runs, and the RuntimeClass API's verbs",
  // runtime-handler: upstream's NodeSupportsPreconfiguredRuntimeClassHandler; every core column
  // has test-handler, and a backend without it skips the cell rather than branch in a case.
  needs: ['real-containers', 'runtime-handler'],
  // Room past upstream's 5 min waits (PodStart, ContainerStatusRetryTimeout) for the rest of a case.
  timeoutMs: 420_000,
  cases: CASES,
};
