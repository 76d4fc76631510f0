import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import {
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Container,
  type V1Pod,
  type V1PodSecurityContext,
} from '@kubernetes/client-node';
import { refusal } from '../support/api-status.js';
import {
  type ApiVolume,
  type ApiVolumeOptions,
  configMapVolume,
  NON_ROOT_UID,
  projectedConfigMapVolume,
} from '../support/api-volume.js';
import { limiter } from '../support/concurrent.js';
import { fileModeLine, type MounttestFlags, mounttest } from '../support/mounttest.js';
import { createPod, podFor, podLog, sh, testContainerOutput, waitForRunning } from '../support/pods.js';

// Upstream's configmap.go (test/e2e/common/node: env from a config map, and its API), and
// configmap_volume.go and projected_configmap.go (test/e2e/common/storage) as named cases: the
// two volume files are one set of cases over the volume that reaches the config map, a configMap
// volume or a projected volume's configMap source.
const NODE_FILE = 'test/e2e/common/node/configmap.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
const FS_GROUP_LABELS = ['NodeFeature:FSGroup', 'Feature:FSGroup'];

/** The fsGroup upstream's FSGroup cases set. */
const FS_GROUP = 1001;
/** GetPodSecretUpdateTimeout with no node TTL annotation: mounttest's retry time, and the log waits'. */
const POD_LOG_MS = 240_000;
/** framework.Poll. */
const POLL_MS = 2_000;
/** e2epod.NewAgnhostPod's container, which runs mounttest. */
const MOUNTTEST = 'agnhost-container';

type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;
/** A case of one volume file, named after its It, run under the cell's limit on pods at once. */
type It = (name: string, tags: readonly string[], run: (ctx: ScenarioContext) => Promise<void>) => Case;

/** newConfigMap: three keys. */
const DATA = { 'data-1': 'value-1', 'data-2': 'value-2', 'data-3': 'value-3' };

async function createConfigMap(
  ctx: ScenarioContext,
  name: string,
  body: Partial<V1ConfigMap> = { data: DATA },
) {
  return ctx.core.createNamespacedConfigMap({
    namespace: ctx.namespace,
    body: { metadata: { name }, ...body },
  });
}

/** One of the twin volume files: its names, and how its volume reaches the config map. */
interface VolumeFile {
  file: string;
  describe: string;
  /** Upstream's object, volume and path names: `configmap-…`, or `projected-configmap-…`. */
  prefix: string;
  volume: ApiVolume;
  /**
   * The mapped case's mode: an item's mode for configMap; upstream's projected builder sets the
   * projection's defaultMode instead (its item-mode line is commented out), so that is mirrored.
   */
  mappedMode: (opts: ApiVolumeOptions, mode: number) => ApiVolumeOptions;
  /** Only configmap_volume.go has the binary data and immutable cases. */
  apiCases: boolean;
}

const VOLUME_FILES: VolumeFile[] = [
  {
    file: 'test/e2e/common/storage/configmap_volume.go',
    describe: 'ConfigMap',
    prefix: '',
    volume: configMapVolume,
    mappedMode: (opts, mode) => ({ ...opts, items: opts.items?.map((i) => ({ ...i, mode })) }),
    apiCases: true,
  },
  {
    file: 'test/e2e/common/storage/projected_configmap.go',
    describe: 'Projected configMap',
    prefix: 'projected-',
    volume: projectedConfigMapVolume,
    mappedMode: (opts, defaultMode) => ({ ...opts, defaultMode }),
    apiCases: false,
  },
];

/**
 * createConfigMapVolumeMounttestPod: mounttest with `flags` over the config map `ref` mounted
 * read-only at `mount`, never restarted.
 */
function mounttestPod(
  ctx: ScenarioContext,
  f: VolumeFile,
  name: string,
  ref: string,
  mount: string,
  flags: MounttestFlags,
  opts: { volume?: ApiVolumeOptions; securityContext?: V1PodSecurityContext; grace?: number } = {},
): V1Pod {
  const volume = `${f.prefix}configmap-volume`;
  return podFor(ctx, name, {
    restartPolicy: 'Never',
    ...(opts.grace !== undefined ? { terminationGracePeriodSeconds: opts.grace } : {}),
    ...(opts.securityContext ? { securityContext: opts.securityContext } : {}),
    volumes: [f.volume(volume, ref, opts.volume)],
    containers: [
      sh(ctx, MOUNTTEST, mounttest(flags), {
        volumeMounts: [{ name: volume, mountPath: mount, readOnly: true }],
      }),
    ],
  });
}

/** Waits until the container's log contains `want`, as upstream's Eventually over GetPodLogs. */
const logShows = (ctx: ScenarioContext, pod: string, container: string, want: string) =>
  ctx.check.eventually(
    `pod ${pod}: ${container}'s log shows ${JSON.stringify(want)}`,
    () => podLog(ctx, pod, container).catch(() => ''),
    (log) => log.includes(want),
    { timeoutMs: POD_LOG_MS, intervalMs: POLL_MS, expected: want },
  );

/** mounttest printing a file every 2 s for POD_LOG_MS, whatever it reads. */
const inLoop = (path: string): MounttestFlags => ({
  fileContentInLoop: path,
  retryTime: POD_LOG_MS / 1000,
  breakOnExpectedContent: false,
});

function volumeCases(f: VolumeFile): Case[] {
  const cm = `${f.prefix}configmap`;
  const mount = `/etc/${cm}-volume`;
  const it: It = (name, tags, run) => ({
    file: f.file,
    name: `${f.describe} ${name}`,
    tags,
    run: (ctx, limit) => limit(() => run(ctx)),
  });

  /**
   * doConfigMapE2EWithoutMappings / WithMappings: every key as a file, or data-2 mapped to
   * path/to/data-2; its content and mode (not the mode when a mapped case sets fsGroup: the
   * kubelet adjusts it), as root or uid 1000, with an fsGroup when one is given.
   */
  const consumable = (
    suffix: string,
    slug: string,
    mapped: boolean,
    user: { nonRoot?: boolean; fsGroup?: number },
    mode?: number,
    tags: readonly string[] = CONFORMANCE,
  ): Case =>
    it(`should be consumable from pods in volume${suffix}`, tags, async (ctx) => {
      const ref = `${cm}-test-volume${mapped ? '-map' : ''}-${slug}`;
      await createConfigMap(ctx, ref);
      const path = mapped ? `${mount}/path/to/data-2` : `${mount}/data-1`;
      let volume: ApiVolumeOptions = mapped ? { items: [{ key: 'data-2', path: 'path/to/data-2' }] } : {};
      if (mode !== undefined) volume = mapped ? f.mappedMode(volume, mode) : { ...volume, defaultMode: mode };
      const securityContext: V1PodSecurityContext = {
        ...(user.nonRoot ? { runAsUser: NON_ROOT_UID } : {}),
        ...(user.fsGroup !== undefined ? { fsGroup: user.fsGroup } : {}),
      };
      const pod = mounttestPod(
        ctx,
        f,
        `pod-${cm}s-${mapped ? 'map-' : ''}${slug}`,
        ref,
        mount,
        { fileContent: path, fileMode: path },
        { volume, securityContext, grace: 1 },
      );
      const expected = [`content of file "${path}": ${mapped ? 'value-2' : 'value-1'}`];
      if (!(mapped && user.fsGroup !== undefined)) expected.push(fileModeLine(path, mode));
      await testContainerOutput(ctx, pod, MOUNTTEST, expected);
    });

  const cases: Case[] = [
    consumable('', 'plain', false, {}),
    consumable(' with defaultMode set [LinuxOnly]', 'defaultmode', false, {}, 0o400),
    // Upstream: setting fsGroup sets the mode to at least 0440.
    consumable(
      ' as non-root with defaultMode and fsGroup set [LinuxOnly]',
      'nonroot-fsgroup-mode',
      false,
      { nonRoot: true, fsGroup: FS_GROUP },
      0o440,
      FS_GROUP_LABELS,
    ),
    consumable(' as non-root', 'nonroot', false, { nonRoot: true }),
    consumable(
      ' as non-root with FSGroup [LinuxOnly]',
      'nonroot-fsgroup',
      false,
      { nonRoot: true, fsGroup: FS_GROUP },
      undefined,
      FS_GROUP_LABELS,
    ),
    consumable(' with mappings', 'plain', true, {}),
    consumable(' with mappings and Item mode set [LinuxOnly]', 'itemmode', true, {}, 0o400),
    consumable(' with mappings as non-root', 'nonroot', true, { nonRoot: true }),
    consumable(
      ' with mappings as non-root with FSGroup [LinuxOnly]',
      'nonroot-fsgroup',
      true,
      { nonRoot: true, fsGroup: FS_GROUP },
      undefined,
      FS_GROUP_LABELS,
    ),

    // The running pod reads data-1 in a loop; the map's update reaches the file.
    it('updates should be reflected in volume', CONFORMANCE, async (ctx) => {
      const ref = `${cm}-test-upd`;
      const pod = `pod-${cm}s-upd`;
      await createConfigMap(ctx, ref, { data: { 'data-1': 'value-1' } });
      await createPod(ctx, mounttestPod(ctx, f, pod, ref, mount, inLoop(`${mount}/data-1`)));
      await waitForRunning(ctx, pod);
      await logShows(ctx, pod, MOUNTTEST, 'value-1');
      // Upstream updates without a resourceVersion, to force the update.
      await ctx.core.replaceNamespacedConfigMap({
        name: ref,
        namespace: ctx.namespace,
        body: { metadata: { name: ref }, data: { 'data-1': 'value-2' } },
      });
      await logShows(ctx, pod, MOUNTTEST, 'value-2');
    }),

    // Three optional volumes: one whose map is deleted, one whose map loses data-1 and gains
    // data-3, one whose map is created only after the pod started.
    it('optional updates should be reflected in volume', CONFORMANCE, async (ctx) => {
      const base = `/etc/${cm}-volumes`;
      const pod = `pod-${cm}s-optional`;
      const maps = {
        delete: { ref: `${f.prefix}cm-test-opt-del`, container: 'delcm-volume-test', key: 'data-1' },
        update: { ref: `${f.prefix}cm-test-opt-upd`, container: 'updcm-volume-test', key: 'data-3' },
        create: { ref: `${f.prefix}cm-test-opt-create`, container: 'createcm-volume-test', key: 'data-1' },
      };
      const one = { data: { 'data-1': 'value-1' } };
      await createConfigMap(ctx, maps.delete.ref, one);
      await createConfigMap(ctx, maps.update.ref, one);
      const entries = Object.entries(maps);
      const volume = (what: string) => `${what}cm-volume`;
      await createPod(
        ctx,
        podFor(ctx, pod, {
          restartPolicy: 'Never',
          volumes: entries.map(([what, m]) => f.volume(volume(what), m.ref, { optional: true })),
          containers: entries.map(([what, m]) =>
            sh(ctx, m.container, mounttest(inLoop(`${base}/${what}/${m.key}`)), {
              volumeMounts: [{ name: volume(what), mountPath: `${base}/${what}`, readOnly: true }],
            }),
          ),
        }),
      );
      await waitForRunning(ctx, pod);
      const error = (what: keyof typeof maps) => `Error reading file ${base}/${what}/${maps[what].key}`;
      await logShows(ctx, pod, maps.create.container, error('create'));
      await logShows(ctx, pod, maps.update.container, error('update'));
      await logShows(ctx, pod, maps.delete.container, 'value-1');

      await ctx.core.deleteNamespacedConfigMap({ name: maps.delete.ref, namespace: ctx.namespace });
      await ctx.core.replaceNamespacedConfigMap({
        name: maps.update.ref,
        namespace: ctx.namespace,
        body: { metadata: { name: maps.update.ref }, data: { 'data-3': 'value-3' } },
      });
      await createConfigMap(ctx, maps.create.ref, one);

      await logShows(ctx, pod, maps.create.container, 'value-1');
      await logShows(ctx, pod, maps.update.container, 'value-3');
      await logShows(ctx, pod, maps.delete.container, error('delete'));
    }),

    // The same config map in two volumes of one container.
    it('should be consumable in multiple volumes in the same pod', CONFORMANCE, async (ctx) => {
      const ref = `${cm}-test-volume-multi`;
      await createConfigMap(ctx, ref);
      const volumes = [`${cm}-volume`, `${cm}-volume-2`];
      const pod = podFor(ctx, `pod-${cm}s-multi`, {
        restartPolicy: 'Never',
        volumes: volumes.map((v) => f.volume(v, ref)),
        containers: [
          sh(ctx, `${cm}-volume-test`, mounttest({ fileContent: `${mount}/data-1` }), {
            volumeMounts: volumes.map((name) => ({ name, mountPath: `/etc/${name}`, readOnly: true })),
          }),
        ],
      });
      await testContainerOutput(ctx, pod, `${cm}-volume-test`, [
        `content of file "${mount}/data-1": value-1`,
      ]);
    }),
  ];
  if (f.apiCases) cases.push(binaryDataCase(f, it, mount), immutableCase(f));
  return cases;
}

/** A text key read in a loop by mounttest, and a binary key hexdumped by a second container. */
const binaryDataCase = (f: VolumeFile, it: It, mount: string): Case =>
  it('binary data should be reflected in volume', CONFORMANCE, async (ctx) => {
    const ref = 'configmap-test-binary';
    const name = 'pod-configmaps-binary';
    const binary = 'configmap-volume-binary-test';
    await createConfigMap(ctx, ref, {
      data: { 'data-1': 'value-1' },
      binaryData: { 'dump.bin': Buffer.from([0xde, 0xca, 0xfe, 0xba, 0xd0, 0xfe, 0xff]).toString('base64') },
    });
    const pod = mounttestPod(ctx, f, name, ref, mount, inLoop(`${mount}/data-1`));
    pod.spec!.containers.push({
      ...sh(ctx, binary, ''),
      command: ['hexdump', '-C', `${mount}/dump.bin`],
      volumeMounts: pod.spec!.containers[0]!.volumeMounts,
    });
    await createPod(ctx, pod);
    await waitForRunning(ctx, name);
    await logShows(ctx, name, MOUNTTEST, 'value-1');
    await logShows(ctx, name, binary, 'de ca fe ba d0 fe ff');
  });

/** The API keeps an immutable map's data and immutability; its metadata may change, and it deletes. */
const immutableCase = (f: VolumeFile): Case => ({
  file: f.file,
  name: `${f.describe} should be immutable if \`immutable\` field is set`,
  tags: ['Conformance'],
  async run(ctx) {
    const name = 'immutable';
    const { namespace } = ctx;
    const replace = (body: V1ConfigMap) => ctx.core.replaceNamespacedConfigMap({ name, namespace, body });
    let current = await createConfigMap(ctx, name);
    current = await replace({ ...current, data: { ...current.data, 'data-4': 'value-4' } });
    current = await replace({ ...current, immutable: true });

    const invalid = async (what: string, body: V1ConfigMap) => {
      const r = await refusal(replace(body));
      ctx.check.ok(
        `${what} is refused as Invalid`,
        r.code === 422 && r.reason === 'Invalid',
        r,
        '422 Invalid',
      );
    };
    await invalid('changing the data of an immutable config map', {
      ...current,
      data: { ...current.data, 'data-5': 'value-5' },
    });
    current = await ctx.core.readNamespacedConfigMap({ name, namespace });
    ctx.check.equal('the config map is still immutable', current.immutable, true);
    await invalid('making an immutable config map mutable', { ...current, immutable: false });

    current = await ctx.core.readNamespacedConfigMap({ name, namespace });
    await replace({ ...current, metadata: { ...current.metadata, labels: { label1: 'value1' } } });
    await ctx.core.deleteNamespacedConfigMap({ name, namespace });
  },
});

const nodeCase = (
  name: string,
  tags: readonly string[],
  run: (ctx: ScenarioContext) => Promise<void>,
): Case => ({
  file: NODE_FILE,
  name: `ConfigMap ${name}`,
  tags,
  run: (ctx, limit) => limit(() => run(ctx)),
});

/**
 * The env cases run `env` itself where upstream runs `sh -c env`: the busybox here (Debian's
 * 1.35) drops variables whose names are not shell names, such as data-1, from the environment
 * its sh passes on, while the kubelet set them in the container's.
 */
const envTest = (ctx: ScenarioContext, extra: Partial<V1Container>) => ({
  ...sh(ctx, 'env-test', ''),
  command: ['env'],
  ...extra,
});

const NODE_CASES: Case[] = [
  nodeCase('should be consumable via environment variable', CONFORMANCE, async (ctx) => {
    const ref = 'configmap-test-env-var';
    await createConfigMap(ctx, ref);
    const env = [{ name: 'CONFIG_DATA_1', valueFrom: { configMapKeyRef: { name: ref, key: 'data-1' } } }];
    const pod = podFor(ctx, 'pod-configmaps-env-var', {
      restartPolicy: 'Never',
      containers: [envTest(ctx, { env })],
    });
    await testContainerOutput(ctx, pod, 'env-test', ['CONFIG_DATA_1=value-1']);
  }),
  nodeCase('should be consumable via the environment', CONFORMANCE, async (ctx) => {
    const ref = 'configmap-test-env-from';
    await createConfigMap(ctx, ref);
    const envFrom = [{ configMapRef: { name: ref } }, { prefix: 'p-', configMapRef: { name: ref } }];
    const pod = podFor(ctx, 'pod-configmaps-env-from', {
      restartPolicy: 'Never',
      containers: [envTest(ctx, { envFrom })],
    });
    const pairs = Object.entries(DATA).map(([k, v]) => `${k}=${v}`);
    await testContainerOutput(ctx, pod, 'env-test', [...pairs, ...pairs.map((p) => `p-${p}`)]);
  }),
  // Upstream's name has a capital letter, which alone would be refused; a valid name leaves the
  // empty key as the reason, and the Status must name it.
  nodeCase('should fail to create ConfigMap with empty key', ['Conformance'], async (ctx) => {
    const r = await refusal(createConfigMap(ctx, 'configmap-test-emptykey', { data: { '': 'value-1' } }));
    ctx.check.ok(
      'a config map with an empty key is refused as Invalid, naming data[]',
      r.code === 422 && r.reason === 'Invalid' && (r.message ?? '').includes('data[]'),
      r,
      '422 Invalid: data[]: Invalid value: ""',
    );
  }),
  nodeCase('should update ConfigMap successfully', [], async (ctx) => {
    const name = 'configmap-test-update';
    await createConfigMap(ctx, name);
    // Upstream sends its own object again, without a resourceVersion.
    const data = { data: 'value' };
    await ctx.core.replaceNamespacedConfigMap({
      name,
      namespace: ctx.namespace,
      body: { metadata: { name }, data },
    });
    const got = await ctx.core.readNamespacedConfigMap({ name, namespace: ctx.namespace });
    ctx.check.equal('the config map has the updated data', got.data, data);
  }),
  nodeCase('should run through a ConfigMap lifecycle', ['Conformance'], async (ctx) => {
    const name = 'test-configmap-lifecycle';
    const { namespace } = ctx;
    const STATIC = 'test-configmap-static';
    await createConfigMap(ctx, name, {
      metadata: { name, labels: { [STATIC]: 'true' } },
      data: { valueName: 'value' },
    });
    const got = await ctx.core.readNamespacedConfigMap({ name, namespace });
    ctx.check.equal(
      'fetched: its data and static label',
      [got.data?.valueName, got.metadata?.labels?.[STATIC]],
      ['value', 'true'],
    );
    await ctx.core.patchNamespacedConfigMap(
      {
        name,
        namespace,
        body: { metadata: { labels: { 'test-configmap': 'patched' } }, data: { valueName: 'value1' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const all = await ctx.core.listConfigMapForAllNamespaces({ labelSelector: 'test-configmap=patched' });
    ctx.check.ok(
      'the patched config map is listed across namespaces by its new label, with both labels and the new value',
      all.items.some(
        (c) =>
          c.metadata?.name === name &&
          c.metadata.namespace === namespace &&
          c.metadata.labels?.[STATIC] === 'true' &&
          c.data?.valueName === 'value1',
      ),
      all.items.map((c) => ({ metadata: c.metadata, data: c.data })),
    );
    await ctx.core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: `${STATIC}=true` });
    const left = await ctx.core.listNamespacedConfigMap({ namespace, labelSelector: `${STATIC}=true` });
    ctx.check.equal('no config map is left after the collection delete', left.items.length, 0);
  }),
];

export const configMap: CasesScenario<Limit> = {
  name: 'configmap',
  estimateMs: 70_000,
  isolation: 'namespace',
  description:
    'configmap.go, configmap_volume.go and projected_configmap.go cases: a config map in env and envFrom, in configMap and projected volumes (default and item modes, non-root, fsGroup, mappings, binary data, two volumes), updates and optional maps created, changed and deleted under a running pod, and its API (empty key, update, lifecycle, immutable)',
  needs: ['real-containers'],
  // Room for upstream's waits: a pod start (PodStart, 5 min), then its 240 s log waits.
  timeoutMs: 600_000,
  setup: async () => limiter(8),
  cases: [...NODE_CASES, ...VOLUME_FILES.flatMap(volumeCases)],
};
