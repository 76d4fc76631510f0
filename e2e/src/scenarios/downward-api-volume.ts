import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type {
  V1Container,
  V1DownwardAPIVolumeFile,
  V1Pod,
  V1PodSecurityContext,
  V1Volume,
} from '@kubernetes/client-node';
import { limiter } from '../support/concurrent.js';
import { type MounttestFlags, mounttest } from '../support/mounttest.js';
import { createPod, podFor, podLog, sh, testContainerOutput, waitForRunning } from '../support/pods.js';

// Upstream's downwardapi_volume.go and projected_downwardapi.go (test/e2e/common/storage) as named
// cases, one scenario each from the same builders: a downwardAPI volume's files, or a projected
// volume's downwardAPI source's (pod name, the container's cpu and memory requests and limits,
// node allocatable when it sets no limit) with their default and item modes, as uid 1000 with
// an fsGroup, and its labels and annotations files rewritten when the pod's metadata changes.
const CONFORMANCE = ['NodeConformance', 'Conformance'];

const CONTAINER = 'client-container';
const MOUNT = '/etc/podinfo';
const PODNAME = `${MOUNT}/podname`;
/** setPodNonRootUser's uid, and the fsGroup upstream gives it. */
const NON_ROOT_UID = 1000;
const FS_GROUP = 1234;
/** podLogTimeout: how long upstream waits for a label or annotation to show in the log. */
const POD_LOG_MS = 3 * 60_000;
/** framework.Poll. */
const POLL_MS = 2_000;

/** Where the files come from: the upstream file mirrored, its describe, and the volume's form. */
interface Variant {
  file: string;
  describe: string;
  /** The podinfo volume with these items and, when given, this defaultMode. */
  volume(items: V1DownwardAPIVolumeFile[], defaultMode?: number): V1Volume;
  /** mounttest's --retry_time in the update cases. */
  updateRetrySeconds: number;
}

const withMode = (defaultMode?: number) => (defaultMode !== undefined ? { defaultMode } : {});

const DOWNWARD_API: Variant = {
  file: 'test/e2e/common/storage/downwardapi_volume.go',
  describe: 'Downward API volume',
  volume: (items, defaultMode) => ({ name: 'podinfo', downwardAPI: { ...withMode(defaultMode), items } }),
  updateRetrySeconds: 120,
};

// Upstream's podname, fsGroup and resource cases here build their pods with downwardapi_volume.go's
// helpers, a plain downwardAPI volume; their descriptions (and this variant) use a projected one.
const PROJECTED: Variant = {
  file: 'test/e2e/common/storage/projected_downwardapi.go',
  describe: 'Projected downwardAPI',
  volume: (items, defaultMode) => ({
    name: 'podinfo',
    projected: { ...withMode(defaultMode), sources: [{ downwardAPI: { items } }] },
  }),
  updateRetrySeconds: 1200,
};

type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;

/**
 * downwardAPIVolumeBasePod: the podinfo volume with the pod's name and the client container's
 * cpu and memory limits and requests, and its labels and annotations files when it has any.
 */
function basePod(
  v: Variant,
  ctx: ScenarioContext,
  name: string,
  container: V1Container,
  opts: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    itemMode?: number;
    defaultMode?: number;
    securityContext?: V1PodSecurityContext;
  } = {},
): V1Pod {
  const resource = (path: string, r: string) => ({
    path,
    resourceFieldRef: { containerName: CONTAINER, resource: r },
  });
  const field = (path: string, fieldPath: string) => ({ path, fieldRef: { apiVersion: 'v1', fieldPath } });
  const pod = podFor(ctx, name, {
    restartPolicy: 'Never',
    ...(opts.securityContext ? { securityContext: opts.securityContext } : {}),
    containers: [{ ...container, volumeMounts: [{ name: 'podinfo', mountPath: MOUNT }] }],
    volumes: [
      v.volume(
        [
          {
            ...field('podname', 'metadata.name'),
            ...(opts.itemMode !== undefined ? { mode: opts.itemMode } : {}),
          },
          resource('cpu_limit', 'limits.cpu'),
          resource('cpu_request', 'requests.cpu'),
          resource('memory_limit', 'limits.memory'),
          resource('memory_request', 'requests.memory'),
          ...(opts.labels ? [field('labels', 'metadata.labels')] : []),
          ...(opts.annotations ? [field('annotations', 'metadata.annotations')] : []),
        ],
        opts.defaultMode,
      ),
    ],
  });
  pod.metadata!.labels = { ...pod.metadata!.labels, ...opts.labels };
  if (opts.annotations) pod.metadata!.annotations = opts.annotations;
  return pod;
}

const client = (ctx: ScenarioContext, flags: MounttestFlags, extra: Partial<V1Container> = {}) =>
  sh(ctx, CONTAINER, mounttest(flags), extra);

/** A pod whose client container's output is checked, under the cell's limit on pods at once. */
const outputCase = (
  v: Variant,
  name: string,
  tags: readonly string[],
  pod: (ctx: ScenarioContext, podName: string) => V1Pod,
  podName: string,
  expected: (podName: string) => (string | RegExp)[],
): Case => ({
  file: v.file,
  name: `${v.describe} ${name}`,
  tags,
  run: (ctx, limit) => limit(() => testContainerOutput(ctx, pod(ctx, podName), CONTAINER, expected(podName))),
});

const nonRootFsGroup: V1PodSecurityContext = { fsGroup: FS_GROUP, runAsUser: NON_ROOT_UID };

/** downwardAPIVolumeBaseContainers: requests 250m and 32Mi, limits 1250m and 128Mi. */
const RESOURCES = {
  requests: { cpu: '250m', memory: '32Mi' },
  limits: { cpu: '1250m', memory: '128Mi' },
};

/** The file holds the value in the container's resources, rounded up to whole units (divisor 1). */
const resourceCase = (v: Variant, what: string, file: string, value: string): Case =>
  outputCase(
    v,
    `should provide container's ${what}`,
    CONFORMANCE,
    (ctx, n) =>
      basePod(v, ctx, n, client(ctx, { fileContent: `${MOUNT}/${file}` }, { resources: RESOURCES })),
    `downwardapi-volume-${file.replace('_', '-')}`,
    () => [`${value}\n`],
  );

/** Without a limit the file holds the node's allocatable (upstream only asks for a digit). */
const allocatableCase = (v: Variant, what: 'cpu' | 'memory'): Case =>
  outputCase(
    v,
    `should provide node allocatable (${what}) as default ${what} limit if the limit is not set`,
    CONFORMANCE,
    (ctx, n) => basePod(v, ctx, n, client(ctx, { fileContent: `${MOUNT}/${what}_limit` })),
    `downwardapi-volume-default-${what}-limit`,
    () => [/[1-9]/],
  );

/**
 * downwardAPIVolumePodForUpdateTest: mounttest prints the labels or annotations file every 2 s
 * for the variant's retry time; once the log shows `before`, the pod is updated and the log must
 * show `after`.
 */
const updateCase = (
  v: Variant,
  what: 'labels' | 'annotations',
  podName: string,
  meta: Record<string, string>,
  update: (pod: V1Pod) => void,
  before: string,
  after: string,
): Case => ({
  file: v.file,
  name: `${v.describe} should update ${what} on modification`,
  tags: CONFORMANCE,
  run: (ctx, limit) =>
    limit(async () => {
      const container = client(ctx, {
        fileContentInLoop: `${MOUNT}/${what}`,
        retryTime: v.updateRetrySeconds,
        breakOnExpectedContent: false,
      });
      await createPod(ctx, basePod(v, ctx, podName, container, { [what]: meta }));
      await waitForRunning(ctx, podName);
      const logShows = (want: string) =>
        ctx.check.eventually(
          `pod ${podName}: the ${what} file shows ${JSON.stringify(want)}`,
          () => podLog(ctx, podName, CONTAINER).catch(() => ''),
          (log) => log.includes(want),
          { timeoutMs: POD_LOG_MS, intervalMs: POLL_MS, expected: want },
        );
      await logShows(before);
      const pod = await ctx.core.readNamespacedPod({ name: podName, namespace: ctx.namespace });
      update(pod);
      await ctx.core.replaceNamespacedPod({ name: podName, namespace: ctx.namespace, body: pod });
      await logShows(after);
    }),
});

/** Every case of the variant's upstream file, in upstream's order. */
const casesFor = (v: Variant): Case[] => [
  outputCase(
    v,
    'should provide podname only',
    CONFORMANCE,
    (ctx, n) => basePod(v, ctx, n, client(ctx, { fileContent: PODNAME })),
    'downwardapi-volume-podname',
    (n) => [`${n}\n`],
  ),
  outputCase(
    v,
    'should set DefaultMode on files [LinuxOnly]',
    CONFORMANCE,
    (ctx, n) => basePod(v, ctx, n, client(ctx, { fileMode: PODNAME }), { defaultMode: 0o400 }),
    'downwardapi-volume-defaultmode',
    () => [`mode of file "${PODNAME}": -r--------`],
  ),
  outputCase(
    v,
    'should set mode on item file [LinuxOnly]',
    CONFORMANCE,
    (ctx, n) => basePod(v, ctx, n, client(ctx, { fileMode: PODNAME }), { itemMode: 0o400 }),
    'downwardapi-volume-itemmode',
    () => [`mode of file "${PODNAME}": -r--------`],
  ),
  outputCase(
    v,
    'should provide podname as non-root with fsgroup [LinuxOnly]',
    [],
    (ctx, n) =>
      basePod(v, ctx, n, client(ctx, { fileContent: PODNAME }), { securityContext: nonRootFsGroup }),
    'metadata-volume-fsgroup',
    (n) => [`${n}\n`],
  ),
  // Upstream: setting fsGroup sets the mode to at least 0440.
  outputCase(
    v,
    'should provide podname as non-root with fsgroup and defaultMode [LinuxOnly]',
    [],
    (ctx, n) =>
      basePod(v, ctx, n, client(ctx, { fileMode: PODNAME }), {
        itemMode: 0o440,
        securityContext: nonRootFsGroup,
      }),
    'metadata-volume-fsgroup-mode',
    () => [`mode of file "${PODNAME}": -r--r-----`],
  ),
  updateCase(
    v,
    'labels',
    'labelsupdate',
    { key1: 'value1', key2: 'value2' },
    (p) => {
      p.metadata!.labels = { ...p.metadata!.labels, key3: 'value3' };
    },
    'key1="value1"\n',
    'key3="value3"\n',
  ),
  updateCase(
    v,
    'annotations',
    'annotationupdate',
    { builder: 'bar' },
    (p) => {
      p.metadata!.annotations = { ...p.metadata!.annotations, builder: 'foo' };
    },
    'builder="bar"\n',
    'builder="foo"\n',
  ),
  resourceCase(v, 'cpu limit', 'cpu_limit', '2'),
  resourceCase(v, 'memory limit', 'memory_limit', '134217728'),
  resourceCase(v, 'cpu request', 'cpu_request', '1'),
  resourceCase(v, 'memory request', 'memory_request', '33554432'),
  allocatableCase(v, 'cpu'),
  allocatableCase(v, 'memory'),
];

const scenarioFor = (v: Variant, name: string, volume: string): CasesScenario<Limit> => ({
  name,
  estimateMs: 60_000,
  isolation: 'namespace',
  description: `${v.file.split('/').pop()} cases: ${volume}'s pod name, cpu and memory request and limit files (node allocatable without a limit), default and item modes, as uid 1000 with an fsGroup, and labels and annotations files rewritten on update`,
  needs: ['real-containers'],
  // Room for upstream's waits: a pod start (PodStart, 5 min), then its 3 min log waits.
  timeoutMs: 600_000,
  setup: async () => limiter(8),
  cases: casesFor(v),
});

export const downwardApiVolume = scenarioFor(DOWNWARD_API, 'downward-api-volume', 'a downwardAPI volume');
export const projectedDownwardApiVolume = scenarioFor(
  PROJECTED,
  'projected-downward-api-volume',
  "a projected volume's downwardAPI source",
);
