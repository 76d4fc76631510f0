import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import {
  PatchStrategy,
  setHeaderOptions,
  type V1Container,
  type V1KeyToPath,
  type V1Secret,
  type V1Volume,
} from '@kubernetes/client-node';
import { limiter } from '../support/concurrent.js';
import { type MounttestFlags, mounttest } from '../support/mounttest.js';
import { createPod, podFor, podLog, sh, testContainerOutput, waitForRunning } from '../support/pods.js';

// Upstream's secrets.go (test/e2e/common/node), secrets_volume.go and projected_secret.go
// (test/e2e/common/storage) as named cases. The two volume files are one set of cases built for
// either volume source: a secret volume, or a projected volume with one secret source. Secrets
// reach a container as env vars (valueFrom, envFrom with prefixes) and as files with default,
// item and fsGroup modes, mapped paths, in two volumes at once, from the pod's namespace only,
// and as optional volumes that follow the secret being created, updated and deleted; the API
// refuses an empty key, patches, lists and deletes by label, and keeps an immutable secret so.
const NODE_FILE = 'test/e2e/common/node/secrets.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
/** Conformance cases of the API alone: upstream gives them no NodeConformance label. */
const API_CONFORMANCE = ['Conformance'];

/** GetPodSecretUpdateTimeout with the node's secret TTL 0: mounttest's retry time and the waits'. */
const POD_LOG_MS = 240_000;
/** framework.Poll. */
const POLL_MS = 2_000;

type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
const dataOf = (entries: Record<string, string>) =>
  Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, b64(v)]));

/** secretForTest: three keys whose values end in a newline. */
const secretForTest = (name: string): V1Secret => ({
  metadata: { name },
  data: dataOf({ 'data-1': 'value-1\n', 'data-2': 'value-2\n', 'data-3': 'value-3\n' }),
});

const createSecret = (ctx: ScenarioContext, body: V1Secret, namespace = ctx.namespace) =>
  ctx.core.createNamespacedSecret({
    namespace,
    body: { ...body, metadata: { ...body.metadata, namespace } },
  });

/** getFileModeRegex's Linux line: mounttest's mode of the file, 0644 when no mode is set. */
function fileModeLine(path: string, mode = 0o644): string {
  const rwx = [6, 3, 0].map((shift) =>
    ['r', 'w', 'x'].map((c, i) => ((mode >> shift) & (4 >> i) ? c : '-')).join(''),
  );
  return `mode of file "${path}": -${rwx.join('')}`;
}

// --- secrets.go: env vars and the API ---

/** A pod whose env container prints its environment, given the case's secret by name. */
const envCase = (
  name: string,
  tags: readonly string[],
  container: string,
  env: (secret: string) => Pick<V1Container, 'env' | 'envFrom'>,
  expected: string[],
): Case => ({
  file: NODE_FILE,
  name: `Secrets ${name}`,
  tags,
  run: (ctx, limit) =>
    limit(async () => {
      const secret = `secret-test-${container}`;
      await createSecret(ctx, secretForTest(secret));
      // Upstream runs `sh -c env`; Debian's busybox 1.35 ash leaves names that are not shell
      // names (data-1, p-data-1) out of the environment it passes on (upstream's busybox keeps
      // them), so env is the container's command and prints what the kubelet set.
      const c: V1Container = { ...sh(ctx, container, ''), command: ['env'], ...env(secret) };
      const pod = podFor(ctx, `pod-secrets-${container}`, { restartPolicy: 'Never', containers: [c] });
      await testContainerOutput(ctx, pod, container, expected);
    }),
});

/** envFrom the secret with each prefix ('' for none), and the lines that makes env print. */
const fromWithPrefixes = (prefixes: string[]) => ({
  envFrom: (secret: string) => ({
    envFrom: prefixes.map((p) => ({ ...(p ? { prefix: p } : {}), secretRef: { name: secret } })),
  }),
  lines: prefixes.flatMap((p) => [1, 2, 3].map((i) => `${p}data-${i}=value-${i}`)),
});
const viaEnvironment = fromWithPrefixes(['', 'p-']);
const withPrefixes = fromWithPrefixes(['', '1-', '$_-', 'ABC_', '#@!']);

const apiCase = (name: string, run: (ctx: ScenarioContext) => Promise<void>): Case => ({
  file: NODE_FILE,
  name: `Secrets ${name}`,
  tags: API_CONFORMANCE,
  run: (ctx) => run(ctx),
});

/** The API's answer to a request: its HTTP code (0 when it succeeded). */
async function statusOf(request: Promise<unknown>): Promise<number> {
  try {
    await request;
    return 0;
  } catch (e) {
    return (e as { code?: number }).code ?? -1;
  }
}

const NODE_CASES: Case[] = [
  envCase(
    'should be consumable from pods in env vars',
    CONFORMANCE,
    'secret-env-test',
    (secret) => ({
      env: [{ name: 'SECRET_DATA', valueFrom: { secretKeyRef: { name: secret, key: 'data-1' } } }],
    }),
    ['SECRET_DATA=value-1'],
  ),
  envCase(
    'should be consumable via the environment',
    CONFORMANCE,
    'env-test',
    viaEnvironment.envFrom,
    viaEnvironment.lines,
  ),
  envCase(
    'should be consumable as environment variable names variable names with various prefixes',
    API_CONFORMANCE,
    'env-prefixes',
    withPrefixes.envFrom,
    withPrefixes.lines,
  ),
  apiCase('should fail to create secret due to empty secret key', async (ctx) => {
    const code = await statusOf(
      createSecret(ctx, { metadata: { name: 'secret-emptykey-test' }, data: dataOf({ '': 'value-1\n' }) }),
    );
    ctx.check.equal('a secret with an empty key is refused as Invalid', code, 422);
  }),
  apiCase('should patch a secret', async (ctx) => {
    const name = 'test-secret-patch';
    const created = await createSecret(ctx, {
      metadata: { name, labels: { 'testsecret-constant': 'true' } },
      data: dataOf({ key: 'value' }),
      type: 'Opaque',
    });
    ctx.check.ok(
      'the created secret has a resourceVersion',
      !!created.metadata?.resourceVersion,
      created.metadata,
    );
    const listed = async () =>
      (await ctx.core.listSecretForAllNamespaces({ labelSelector: 'testsecret-constant=true' })).items.some(
        (s) => s.metadata?.name === name && s.metadata.namespace === ctx.namespace,
      );
    ctx.check.ok('the secret is listed in all namespaces by its label', await listed());
    // Upstream marshals the base64 text as []byte, so the stored value is base64 of base64.
    await ctx.core.patchNamespacedSecret(
      {
        name,
        namespace: ctx.namespace,
        body: { metadata: { labels: { testsecret: 'true' } }, data: { key: b64(b64('value1')) } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const patched = await ctx.core.readNamespacedSecret({ name, namespace: ctx.namespace });
    ctx.check.ok(
      'the patched secret has a larger resourceVersion',
      BigInt(patched.metadata?.resourceVersion ?? 0) > BigInt(created.metadata?.resourceVersion ?? 0),
      { before: created.metadata?.resourceVersion, after: patched.metadata?.resourceVersion },
    );
    ctx.check.equal('the patched data', unb64(unb64(patched.data?.key)), 'value1');
    await ctx.core.deleteCollectionNamespacedSecret({
      namespace: ctx.namespace,
      labelSelector: 'testsecret=true',
    });
    ctx.check.ok('the secret deleted by its patched label is no longer listed', !(await listed()));
  }),
];

// --- secrets_volume.go and projected_secret.go: one set of cases, two volume sources ---

/** What tells the two files' cases apart: names, paths, and where a mode goes. */
interface VolumeSource {
  file: string;
  describe: string;
  /** The prefix of upstream's secret, pod, volume and mount names. */
  prefix: 'secret' | 'projected-secret';
  podPrefix: 'pod-secrets' | 'pod-projected-secrets';
  volume(
    name: string,
    secret: string,
    opts?: { defaultMode?: number; items?: V1KeyToPath[]; optional?: boolean },
  ): V1Volume;
  /** Where the mapping case's mode goes: the item's mode, or (projected) the volume's defaultMode. */
  itemModeAsDefault: boolean;
  /** The same-name-in-another-namespace case: Conformance for secret volumes only. */
  otherNamespaceTags: readonly string[];
  /** The optional-updates case's mount root. */
  optionalRoot: string;
}

const SECRET_VOLUME: VolumeSource = {
  file: 'test/e2e/common/storage/secrets_volume.go',
  describe: 'Secrets',
  prefix: 'secret',
  podPrefix: 'pod-secrets',
  volume: (name, secretName, opts = {}) => ({ name, secret: { secretName, ...opts } }),
  itemModeAsDefault: false,
  otherNamespaceTags: CONFORMANCE,
  optionalRoot: '/etc/secret-volumes',
};

const PROJECTED_SECRET: VolumeSource = {
  file: 'test/e2e/common/storage/projected_secret.go',
  describe: 'Projected secret',
  prefix: 'projected-secret',
  podPrefix: 'pod-projected-secrets',
  volume: (name, secret, { defaultMode, items, optional } = {}) => ({
    name,
    projected: {
      ...(defaultMode !== undefined ? { defaultMode } : {}),
      sources: [
        {
          secret: {
            name: secret,
            ...(items ? { items } : {}),
            ...(optional !== undefined ? { optional } : {}),
          },
        },
      ],
    },
  }),
  itemModeAsDefault: true,
  otherNamespaceTags: ['NodeConformance'],
  optionalRoot: '/etc/projected-secret-volumes',
};

/** Upstream's nonRootTestUserID and the fsGroup its case gives. */
const NON_ROOT_UID = 1000;
const FS_GROUP = 1001;

/**
 * doSecretE2EWithoutMapping / WithMapping: the secret in one volume, its data-1 (or data-1 mapped to
 * new-path-data-1) read with its mode by mounttest.
 */
function volumeCase(
  src: VolumeSource,
  it: string,
  tags: readonly string[],
  key: string,
  opts: { mode?: number; mapped?: boolean; nonRoot?: boolean; otherNamespace?: boolean } = {},
): Case {
  const mount = `/etc/${src.prefix}-volume`;
  const path = `${mount}/${opts.mapped ? 'new-path-data-1' : 'data-1'}`;
  const secret = `${src.prefix}-test-${key}`;
  const defaultMode = opts.mapped && !src.itemModeAsDefault ? undefined : opts.mode;
  const items = opts.mapped
    ? [{ key: 'data-1', path: 'new-path-data-1', ...(src.itemModeAsDefault ? {} : { mode: opts.mode }) }]
    : undefined;
  return {
    file: src.file,
    name: `${src.describe} ${it}`,
    tags,
    run: (ctx, limit) =>
      limit(async () => {
        if (opts.otherNamespace) {
          // A secret of the same name in another namespace, whose key the pod must not see.
          const other = await ctx.createNamespace(`${src.prefix}-ns`);
          await createSecret(
            ctx,
            {
              metadata: { name: secret },
              data: dataOf({
                this_should_not_match_content_of_other_secret:
                  'similarly_this_should_not_match_content_of_other_secret\n',
              }),
            },
            other,
          );
        }
        await createSecret(ctx, secretForTest(secret));
        const container = sh(
          ctx,
          `${src.prefix}-volume-test`,
          mounttest({ fileMode: path, fileContent: path }),
          {
            volumeMounts: [{ name: `${src.prefix}-volume`, mountPath: mount }],
          },
        );
        const pod = podFor(ctx, `${src.podPrefix}-${key}`, {
          restartPolicy: 'Never',
          ...(opts.nonRoot ? { securityContext: { fsGroup: FS_GROUP, runAsUser: NON_ROOT_UID } } : {}),
          containers: [container],
          volumes: [
            src.volume(`${src.prefix}-volume`, secret, {
              ...(defaultMode !== undefined ? { defaultMode } : {}),
              ...(items ? { items } : {}),
            }),
          ],
        });
        await testContainerOutput(ctx, pod, container.name, [
          `content of file "${path}": value-1`,
          fileModeLine(path, opts.mode),
        ]);
      }),
  };
}

/** The same secret in two volumes of one pod, both read-only; mounttest reads the first. */
const multipleVolumesCase = (src: VolumeSource): Case => ({
  file: src.file,
  name: `${src.describe} should be consumable in multiple volumes in a pod`,
  tags: CONFORMANCE,
  run: (ctx, limit) =>
    limit(async () => {
      const secret = `${src.prefix}-test-multiple`;
      const [v1, v2] = [`${src.prefix}-volume`, `${src.prefix}-volume-2`];
      const path = `/etc/${v1}/data-1`;
      await createSecret(ctx, secretForTest(secret));
      const container = sh(ctx, 'secret-volume-test', mounttest({ fileContent: path, fileMode: path }), {
        volumeMounts: [
          { name: v1, mountPath: `/etc/${v1}`, readOnly: true },
          { name: v2, mountPath: `/etc/${v2}`, readOnly: true },
        ],
      });
      const pod = podFor(ctx, `${src.podPrefix}-multiple`, {
        restartPolicy: 'Never',
        containers: [container],
        volumes: [src.volume(v1, secret), src.volume(v2, secret)],
      });
      await testContainerOutput(ctx, pod, container.name, [
        `content of file "${path}": value-1`,
        fileModeLine(path),
      ]);
    }),
});

/**
 * Three optional volumes, each read in a loop by its own container: one whose secret is deleted,
 * one whose secret loses data-1 and gains data-3, one whose secret is created only once the pod
 * runs. Each container's log must show the change.
 */
const optionalUpdatesCase = (src: VolumeSource): Case => ({
  file: src.file,
  name: `${src.describe} optional updates should be reflected in volume`,
  tags: CONFORMANCE,
  run: (ctx, limit) =>
    limit(async () => {
      // Upstream's names: s-test-opt-del, dels-volume-test, deletes-volume, and so on.
      const part = (what: 'delete' | 'update' | 'create', short: string, key: string) => ({
        what,
        secret: `${src.prefix}-opt-${short}`,
        container: `${short === 'create' ? 'creates' : `${short}s`}-volume-test`,
        volume: `${what}s-volume`,
        path: `${src.optionalRoot}/${what}/${key}`,
      });
      const del = part('delete', 'del', 'data-1');
      const upd = part('update', 'upd', 'data-3');
      const crt = part('create', 'create', 'data-1');
      const parts = [del, upd, crt];
      const secret = (name: string, data: Record<string, string>): V1Secret => ({
        metadata: { name },
        data: dataOf(data),
      });
      await createSecret(ctx, secret(del.secret, { 'data-1': 'value-1' }));
      await createSecret(ctx, secret(upd.secret, { 'data-1': 'value-1' }));
      const podName = `${src.podPrefix}-optional`;
      const flags = (path: string): MounttestFlags => ({
        fileContentInLoop: path,
        retryTime: POD_LOG_MS / 1000,
        breakOnExpectedContent: false,
      });
      await createPod(
        ctx,
        podFor(ctx, podName, {
          restartPolicy: 'Never',
          volumes: parts.map((p) => src.volume(p.volume, p.secret, { optional: true })),
          containers: parts.map((p) =>
            sh(ctx, p.container, mounttest(flags(p.path)), {
              volumeMounts: [{ name: p.volume, mountPath: `${src.optionalRoot}/${p.what}`, readOnly: true }],
            }),
          ),
        }),
      );
      await waitForRunning(ctx, podName);
      const logShows = (container: string, want: string) =>
        ctx.check.eventually(
          `pod ${podName}: ${container} logs ${JSON.stringify(want)}`,
          () => podLog(ctx, podName, container).catch(() => ''),
          (log) => log.includes(want),
          { timeoutMs: POD_LOG_MS, intervalMs: POLL_MS, expected: want },
        );
      const readError = (path: string) => `Error reading file ${path}`;
      await logShows(crt.container, readError(crt.path));
      await logShows(upd.container, readError(upd.path));
      await logShows(del.container, 'value-1');
      await ctx.core.deleteNamespacedSecret({ name: del.secret, namespace: ctx.namespace });
      await ctx.core.replaceNamespacedSecret({
        name: upd.secret,
        namespace: ctx.namespace,
        body: secret(upd.secret, { 'data-3': 'value-3' }),
      });
      await createSecret(ctx, secret(crt.secret, { 'data-1': 'value-1' }));
      await logShows(crt.container, 'value-1');
      await logShows(upd.container, 'value-3');
      await logShows(del.container, readError(del.path));
    }),
});

const volumeCases = (src: VolumeSource): Case[] => [
  volumeCase(src, 'should be consumable from pods in volume', CONFORMANCE, 'default'),
  volumeCase(
    src,
    'should be consumable from pods in volume with defaultMode set [LinuxOnly]',
    CONFORMANCE,
    'mode',
    {
      mode: 0o400,
    },
  ),
  // Upstream: setting fsGroup sets the mode to at least 0440.
  volumeCase(
    src,
    'should be consumable from pods in volume as non-root with defaultMode and fsGroup set [LinuxOnly]',
    CONFORMANCE,
    'nonroot',
    { mode: 0o440, nonRoot: true },
  ),
  volumeCase(src, 'should be consumable from pods in volume with mappings', CONFORMANCE, 'map', {
    mapped: true,
  }),
  volumeCase(
    src,
    'should be consumable from pods in volume with mappings and Item Mode set [LinuxOnly]',
    CONFORMANCE,
    'map-mode',
    { mapped: true, mode: 0o400 },
  ),
  volumeCase(
    src,
    'should be able to mount in a volume regardless of a different secret existing with same name in different namespace',
    src.otherNamespaceTags,
    'other-ns',
    { otherNamespace: true },
  ),
  multipleVolumesCase(src),
  optionalUpdatesCase(src),
];

/**
 * An immutable secret: its data can change until it is marked immutable; then neither its data
 * nor the mark can (422 Invalid), while its labels can, and it can be deleted.
 */
const immutableCase: Case = {
  file: SECRET_VOLUME.file,
  name: 'Secrets should be immutable if `immutable` field is set',
  tags: API_CONFORMANCE,
  run: async (ctx) => {
    const name = 'immutable';
    const namespace = ctx.namespace;
    const update = (body: V1Secret) => ctx.core.replaceNamespacedSecret({ name, namespace, body });
    let current = await createSecret(ctx, secretForTest(name));
    current = await update({ ...current, data: { ...current.data, ...dataOf({ 'data-4': 'value-4\n' }) } });
    current = await update({ ...current, immutable: true });
    ctx.check.equal(
      'changing an immutable secret data is refused as Invalid',
      await statusOf(update({ ...current, data: { ...current.data, ...dataOf({ 'data-5': 'value-5\n' }) } })),
      422,
    );
    current = await ctx.core.readNamespacedSecret({ name, namespace });
    ctx.check.equal('the secret stays immutable', current.immutable, true);
    ctx.check.equal(
      'marking an immutable secret mutable is refused as Invalid',
      await statusOf(update({ ...current, immutable: false })),
      422,
    );
    current = await ctx.core.readNamespacedSecret({ name, namespace });
    ctx.check.equal(
      'an immutable secret labels can change',
      await statusOf(update({ ...current, metadata: { ...current.metadata, labels: { label1: 'value1' } } })),
      0,
    );
    ctx.check.equal(
      'an immutable secret can be deleted',
      await statusOf(ctx.core.deleteNamespacedSecret({ name, namespace })),
      0,
    );
  },
};

export const secrets: CasesScenario<Limit> = {
  name: 'secrets',
  estimateMs: 60_000,
  isolation: 'namespace',
  description:
    "secrets.go, secrets_volume.go and projected_secret.go cases: a secret's keys as env vars and as files of a secret or projected volume with their modes, mappings and fsGroup, from the pod's own namespace, optional volumes following create, update and delete, and the API's empty-key, patch and immutable rules",
  needs: ['real-containers'],
  // Room for upstream's waits: a pod start (PodStart, 5 min), then its 240 s log waits.
  timeoutMs: 600_000,
  setup: async () => limiter(8),
  cases: [...NODE_CASES, ...volumeCases(SECRET_VOLUME), immutableCase, ...volumeCases(PROJECTED_SECRET)],
};
