import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Container, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { allChecks } from '../support/concurrent.js';
import {
  containerStatus,
  createPod,
  execShellInContainer,
  kubectlExec,
  POD_DELETE_MS,
  POD_START_MS,
  podFor,
  readPod,
  sh,
  testContainerOutput,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';

/** Upstream's names and paths (testsuites/subpath.go). */
const VOLUME_PATH = '/test-volume';
const VOLUME_NAME = 'test-volume';
const FILE_NAME = 'test-file';
/** agnhost mounttest's --new_file_0644 content and its read-back line. */
const NEW_FILE = 'mount-tester new file';
const contentLine = (file: string, text = NEW_FILE) => `content of file "${file}": ${text}`;

/** mounttest --new_file_0644=<file>: writes the file with mode 0644. */
const writeFile = (file: string) => `echo '${NEW_FILE}' > ${file} && chmod 0644 ${file}`;
/** mounttest --file_content_in_loop=<file> --retry_time=20: prints the file, retrying up to 20 s. */
const readFile = (file: string) =>
  `for i in $(seq 20); do [ -f ${file} ] && break; sleep 1; done; echo "content of file \\"${file}\\": $(cat ${file})"`;

/** SubpathTestPod's liveness-probe volume: an emptyDir every container mounts at PROBE_VOLUME_PATH. */
const PROBE_VOLUME_NAME = 'liveness-probe-volume';
const PROBE_VOLUME_PATH = '/probe-volume';
const PROBE_FILE = `${PROBE_VOLUME_PATH}/probe-file`;
/** e2epod.InfiniteSleepCommandWithoutGracefulShutdown. */
const INFINITE_SLEEP_NO_GRACE = 'while true; do sleep 1; done';
/** framework.Poll, and the minute of unchanged restart counts upstream calls stable. */
const POLL_MS = 2_000;
const STABLE_MS = 60_000;
/** f.Timeouts.PodDelete + PodStart: upstream's wait for the first restart. */
const RESTART_TIMEOUT_MS = 10 * 60_000;
/** f.Timeouts.PodStartSlow: upstream's wait for the restarts to stabilize. */
const STABILIZE_TIMEOUT_MS = 15 * 60_000;

type Driver = 'emptydir' | 'hostPath';
const drivers: Driver[] = ['emptydir', 'hostPath'];
export const pattern = (d: Driver) =>
  `In-tree Volumes [Driver: ${d}] [Testpattern: Inline-volume (default fs)] subPath`;

/** Each driver's inline volume: an emptyDir, or the node's /tmp (upstream's hostPath driver). */
export const volumeSource = (d: Driver): V1Volume =>
  d === 'emptydir' ? { name: VOLUME_NAME, emptyDir: {} } : { name: VOLUME_NAME, hostPath: { path: '/tmp' } };

interface CaseSpec {
  /** setInitCommand: init container 0, with the whole volume mounted. */
  init?: string;
  /** Init container that writes through the sub-path mount (upstream's InitContainers[1]). */
  initSubpath?: string;
  /** Init container that writes into the whole volume (upstream's InitContainers[2]). */
  initVolume?: string;
  /** Container 0, with the sub-path mounted at VOLUME_PATH. */
  subpath?: string;
  subpathMounts?: V1VolumeMount[];
  readOnly?: boolean;
  /** Container 1, with the whole volume mounted. */
  volume?: string;
}

/** SubpathTestPod after removeUnusedContainers: only the containers a case gives commands. */
function subpathPod(ctx: ScenarioContext, name: string, d: Driver, subPath: string, c: CaseSpec): V1Pod {
  const volumeMount = { name: VOLUME_NAME, mountPath: VOLUME_PATH };
  const subpathMount = { ...volumeMount, subPath, ...(c.readOnly ? { readOnly: true } : {}) };
  const init: V1Container[] = [];
  if (c.init) init.push(sh(ctx, 'init-volume', c.init, { volumeMounts: [volumeMount] }));
  if (c.initSubpath)
    init.push(sh(ctx, 'test-init-subpath', c.initSubpath, { volumeMounts: [{ ...volumeMount, subPath }] }));
  if (c.initVolume) init.push(sh(ctx, 'test-init-volume', c.initVolume, { volumeMounts: [volumeMount] }));
  const containers = [
    sh(ctx, 'test-container-subpath', c.subpath ?? 'true', {
      volumeMounts: [subpathMount, ...(c.subpathMounts ?? [])],
    }),
  ];
  if (c.volume) containers.push(sh(ctx, 'test-container-volume', c.volume, { volumeMounts: [volumeMount] }));
  return podFor(ctx, name, {
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 1,
    initContainers: init,
    containers,
    volumes: [volumeSource(d)],
  });
}

/**
 * SubpathTestPod as upstream's restart and reconstruction tests run it (removeUnusedContainers
 * applied): both containers sleep, every container also mounts the liveness-probe emptyDir, and
 * init container 0 runs `init` when given.
 */
export function sleepingSubpathPod(
  ctx: ScenarioContext,
  name: string,
  volume: V1Volume,
  subPath: string,
  opts: { init?: string; sleep: string; restartPolicy: 'Never' | 'OnFailure'; grace: number },
): V1Pod {
  const probeMount = { name: PROBE_VOLUME_NAME, mountPath: PROBE_VOLUME_PATH };
  const volumeMount = { name: VOLUME_NAME, mountPath: VOLUME_PATH };
  return podFor(ctx, name, {
    restartPolicy: opts.restartPolicy,
    terminationGracePeriodSeconds: opts.grace,
    initContainers: opts.init
      ? [sh(ctx, 'init-volume', opts.init, { volumeMounts: [volumeMount, probeMount] })]
      : [],
    containers: [
      sh(ctx, 'test-container-subpath', opts.sleep, {
        volumeMounts: [{ ...volumeMount, subPath }, probeMount],
      }),
      sh(ctx, 'test-container-volume', opts.sleep, { volumeMounts: [volumeMount, probeMount] }),
    ],
    volumes: [
      { ...volume, name: VOLUME_NAME },
      { name: PROBE_VOLUME_NAME, emptyDir: {} },
    ],
  });
}

const restartCount = (p: V1Pod) => containerStatus(p, 'test-container-subpath')?.restartCount ?? 0;

/**
 * testPodContainerRestartWithHooks: the pod runs and is ready; `fail` breaks container 0's
 * liveness probe until it restarts; `fix` repairs it, and its restart count then stays the same
 * for a minute.
 */
async function testPodContainerRestart(
  ctx: ScenarioContext,
  pod: V1Pod,
  liveness: string[],
  hooks: { fail(): Promise<unknown>; fix(): Promise<unknown> },
) {
  const name = pod.metadata!.name!;
  pod.spec!.containers[0]!.livenessProbe = {
    exec: { command: liveness },
    initialDelaySeconds: 1,
    failureThreshold: 1,
    periodSeconds: 2,
  };
  await createPod(ctx, pod);
  await waitForPod(
    ctx,
    name,
    'is Running and Ready',
    (p) =>
      p.status?.phase === 'Running' &&
      p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    POD_START_MS,
  );
  await hooks.fail();
  let restarts = restartCount(
    await waitForPod(
      ctx,
      name,
      'restarted test-container-subpath',
      (p) => restartCount(p) > 0,
      RESTART_TIMEOUT_MS,
    ),
  );
  await hooks.fix();
  let stable = 0;
  await ctx.check.eventually(
    `pod ${name}: test-container-subpath stopped restarting (restart count unchanged for a minute)`,
    async () => {
      const n = restartCount(await readPod(ctx, name));
      if (n === restarts) stable++;
      else [restarts, stable] = [n, 0];
      return { restarts, stable };
    },
    (s) => s.stable > STABLE_MS / POLL_MS,
    { timeoutMs: STABILIZE_TIMEOUT_MS, intervalMs: POLL_MS, expected: 'the same restart count for a minute' },
  );
}

/** testPodContainerRestart: the probe reads the probe file, which container 1 removes and rewrites. */
function testSubpathContainerRestart(ctx: ScenarioContext, pod: V1Pod) {
  const name = pod.metadata!.name!;
  return testPodContainerRestart(ctx, pod, ['cat', PROBE_FILE], {
    fail: () => execShellInContainer(ctx, name, 'test-container-volume', `rm ${PROBE_FILE}`),
    fix: () => execShellInContainer(ctx, name, 'test-container-volume', `echo test-after > ${PROBE_FILE}`),
  });
}

/** e2eoutput.TestContainerOutput with upstream's PodStartTimeout. */
const testOutput = (ctx: ScenarioContext, pod: V1Pod, container: string, lines: string[]) =>
  testContainerOutput(ctx, pod, container, lines, POD_START_MS);

/**
 * waitForPodSubpathError: the sub-path container waits with CreateContainerConfigError and a
 * message that names subPath; it never runs.
 */
async function testPodFailSubpath(ctx: ScenarioContext, pod: V1Pod) {
  const name = pod.metadata!.name!;
  await createPod(ctx, pod);
  const p = await waitForPod(
    ctx,
    name,
    'has test-container-subpath waiting with CreateContainerConfigError naming subPath',
    (p) => {
      const st = containerStatus(p, 'test-container-subpath')?.state;
      if (st?.terminated || st?.running) return true; // unexpected: judged below
      return (
        st?.waiting?.reason === 'CreateContainerConfigError' && !!st.waiting.message?.includes('subPath')
      );
    },
    POD_START_MS,
  );
  const st = containerStatus(p, 'test-container-subpath')?.state;
  ctx.check.ok(`pod ${name}: subpath container never ran`, !st?.running && !st?.terminated, st, 'waiting');
}

/**
 * Per-case names for one driver: the pod's (`n`), and its own sub-path (upstream's
 * f.Namespace.Name), since the hostPath driver's /tmp is shared by every case.
 */
function caseNames(ctx: ScenarioContext, d: Driver) {
  const n = (s: string) => `${d.toLowerCase()}-${s}`;
  const sub = (s: string) => `${ctx.namespace}-${n(s)}`;
  return { n, sub, subDir: (s: string) => `${VOLUME_PATH}/${sub(s)}` };
}

/** The testsuite's cases for one driver that run their pods to an end, each with its own pod and sub-path. */
function driverCases(ctx: ScenarioContext, d: Driver): Promise<void>[] {
  const { n, sub, subDir } = caseNames(ctx, d);
  const inSubpath = `${VOLUME_PATH}/${FILE_NAME}`;
  const inVolume = (s: string) => `${subDir(s)}/${FILE_NAME}`;
  /** SubpathTestPod for case `s`: its own pod name and sub-path. */
  const pod = (s: string, c: CaseSpec) => subpathPod(ctx, n(s), d, sub(s), c);
  const fail = (s: string, init: string) => testPodFailSubpath(ctx, pod(s, { init }));
  return [
    // should support non-existent path
    testOutput(
      ctx,
      pod('nonexist', {
        initSubpath: writeFile(inSubpath),
        volume: readFile(inVolume('nonexist')),
      }),
      'test-container-volume',
      [contentLine(inVolume('nonexist'))],
    ),
    // should support existing directory
    testOutput(
      ctx,
      pod('dir', {
        init: `mkdir -p ${subDir('dir')}`,
        initSubpath: writeFile(inSubpath),
        volume: readFile(inVolume('dir')),
      }),
      'test-container-volume',
      [contentLine(inVolume('dir'))],
    ),
    // should support existing single file: the sub-path is the file's directory here, read from inside
    testOutput(
      ctx,
      pod('file', {
        init: `mkdir -p ${subDir('file')}; echo "${NEW_FILE}" > ${inVolume('file')}`,
        subpath: readFile(inSubpath),
      }),
      'test-container-subpath',
      [contentLine(inSubpath)],
    ),
    // should support file as subpath: the file itself mounted at VOLUME_PATH
    testOutput(
      ctx,
      pod('asfile', {
        init: `echo ${ctx.namespace} > ${subDir('asfile')}`,
        subpath: readFile(VOLUME_PATH),
      }),
      'test-container-subpath',
      [contentLine(VOLUME_PATH, ctx.namespace)],
    ),
    fail('outdir', `ln -s /bin ${subDir('outdir')}`),
    fail('outfile', `ln -s /bin/sh ${subDir('outfile')}`),
    fail('outnonexist', `ln -s /bin/notanexistingpath ${subDir('outnonexist')}`),
    fail('backstep', `ln -s ../ ${subDir('backstep')}`),
    // should support creating multiple subpath from same volumes
    testOutput(
      ctx,
      pod('multi', {
        init: `mkdir -p ${subDir('multi')} ${VOLUME_PATH}/${sub('multi')}-1 ${VOLUME_PATH}/${sub('multi')}-2`,
        subpathMounts: [
          { name: VOLUME_NAME, mountPath: '/test-subpath1', subPath: `${sub('multi')}-1` },
          { name: VOLUME_NAME, mountPath: '/test-subpath2', subPath: `${sub('multi')}-2` },
        ],
        subpath: [
          writeFile(`/test-subpath1/${FILE_NAME}`),
          writeFile(`/test-subpath2/${FILE_NAME}`),
          readFile(`/test-subpath1/${FILE_NAME}`),
          readFile(`/test-subpath2/${FILE_NAME}`),
        ].join('; '),
      }),
      'test-container-subpath',
      [contentLine(`/test-subpath1/${FILE_NAME}`), contentLine(`/test-subpath2/${FILE_NAME}`)],
    ),
    // should support readOnly directory specified in the volumeMount
    testOutput(
      ctx,
      pod('rodir', {
        init: `mkdir -p ${subDir('rodir')}`,
        initVolume: writeFile(inVolume('rodir')),
        readOnly: true,
        subpath: `${readFile(inSubpath)}; touch ${VOLUME_PATH}/x 2>/dev/null && echo writable || echo read-only`,
      }),
      'test-container-subpath',
      [contentLine(inSubpath), 'read-only'],
    ),
    // should support readOnly file specified in the volumeMount
    testOutput(
      ctx,
      pod('rofile', {
        init: `touch ${subDir('rofile')}`,
        initVolume: writeFile(subDir('rofile')),
        readOnly: true,
        subpath: readFile(VOLUME_PATH),
      }),
      'test-container-subpath',
      [contentLine(VOLUME_PATH)],
    ),
    // should be able to unmount after the subpath directory is deleted
    unmountAfterDelete(
      ctx,
      pod('rmdir', {
        init: `mkdir -p ${subDir('rmdir')}`,
        subpath: 'sleep 3600',
        volume: 'sleep 3600',
      }),
      subDir('rmdir'),
    ),
  ];
}

/**
 * The testsuite's container restart cases for one driver: a liveness-driven restart, then a
 * minute without one. They run after the other cases, so that their 2 s exec probes are not
 * starved by the burst of pods starting at once.
 */
function driverRestartCases(ctx: ScenarioContext, d: Driver): Promise<void>[] {
  const { n, sub, subDir } = caseNames(ctx, d);
  const restartOpts = { sleep: INFINITE_SLEEP_NO_GRACE, restartPolicy: 'OnFailure', grace: 1 } as const;
  return [
    // should support restarting containers using directory as subpath
    testSubpathContainerRestart(
      ctx,
      sleepingSubpathPod(ctx, n('restart-dir'), volumeSource(d), sub('restart-dir'), {
        init: `mkdir -p ${subDir('restart-dir')}; touch ${PROBE_FILE}`,
        ...restartOpts,
      }),
    ),
    // should support restarting containers using file as subpath
    testSubpathContainerRestart(
      ctx,
      sleepingSubpathPod(ctx, n('restart-file'), volumeSource(d), sub('restart-file'), {
        init: `touch ${subDir('restart-file')}; touch ${PROBE_FILE}`,
        ...restartOpts,
      }),
    ),
  ];
}

/** The volume container removes the sub-path directory; deleting the pod still unmounts and finishes. */
async function unmountAfterDelete(ctx: ScenarioContext, pod: V1Pod, dir: string) {
  const name = pod.metadata!.name!;
  await createPod(ctx, pod);
  await waitForRunning(ctx, name, POD_START_MS);
  const rm = await kubectlExec(ctx, name, 'test-container-volume', ['rm', '-r', dir]);
  ctx.check.ok(
    `pod ${name}: sub-path directory removed from the volume container`,
    rm.code === 0,
    rm.stderr,
    'exit 0',
  );
  await ctx.core.deleteNamespacedPod({ name, namespace: ctx.namespace });
  await ctx.check.eventually(
    `pod ${name} deleted after its sub-path directory was removed`,
    () =>
      ctx.core.readNamespacedPod({ name, namespace: ctx.namespace }).then(
        () => 'present',
        () => 'gone',
      ),
    (s) => s === 'gone',
    { timeoutMs: POD_DELETE_MS, intervalMs: 2_000, expected: 'gone' },
  );
}

/** storage/subpath.go "Atomic writer volumes": a key of an API-projected volume mounted by subPath. */
async function atomicWriterCases(ctx: ScenarioContext): Promise<void> {
  await ctx.core.createNamespacedSecret({
    namespace: ctx.namespace,
    body: { metadata: { name: 'my-secret' }, stringData: { 'secret-key': 'secret-value' } },
  });
  await ctx.core.createNamespacedConfigMap({
    namespace: ctx.namespace,
    body: { metadata: { name: 'my-configmap' }, data: { 'configmap-key': 'configmap-value' } },
  });
  /** TestBasicSubpathFile: the sub-path file mounted at `mountPath`, read by container 0. */
  const basic = (
    name: string,
    subPath: string,
    volume: Omit<V1Volume, 'name'>,
    contents: string,
    mountPath = VOLUME_PATH,
  ) =>
    testOutput(
      ctx,
      podFor(ctx, name, {
        restartPolicy: 'Never',
        containers: [
          sh(ctx, 'test-container-subpath', readFile(mountPath), {
            volumeMounts: [{ name: VOLUME_NAME, mountPath, subPath }],
          }),
        ],
        volumes: [{ name: VOLUME_NAME, ...volume }],
      }),
      'test-container-subpath',
      [contentLine(mountPath, contents)],
    );
  const configMap = { configMap: { name: 'my-configmap' } };
  await allChecks([
    basic('pod-subpath-test-secret', 'secret-key', { secret: { secretName: 'my-secret' } }, 'secret-value'),
    basic('pod-subpath-test-configmap', 'configmap-key', configMap, 'configmap-value'),
    // mountPath of a file the image has: the sub-path file replaces it
    basic(
      'pod-subpath-test-configmap-file',
      'configmap-key',
      configMap,
      'configmap-value',
      '/etc/resolv.conf',
    ),
    basic(
      'pod-subpath-test-downwardapi',
      'downward/podname',
      { downwardAPI: { items: [{ path: 'downward/podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
      'pod-subpath-test-downwardapi',
    ),
    basic(
      'pod-subpath-test-projected',
      'projected/configmap-key',
      {
        projected: {
          sources: [
            {
              configMap: {
                name: 'my-configmap',
                items: [{ key: 'configmap-key', path: 'projected/configmap-key' }],
              },
            },
          ],
        },
      },
      'configmap-value',
    ),
  ]);
}

/**
 * TestPodContainerRestartWithConfigmapModified: a config map key mounted by sub-path; the probe
 * passes while the probe file exists or the mounted key holds the modified value. The probe file
 * goes, then the config map is updated: a restarted container must see the new value.
 */
async function configMapModifiedCase(ctx: ScenarioContext): Promise<void> {
  const name = 'my-configmap-to-modify';
  const original = { metadata: { name }, data: { 'configmap-key': 'configmap-value' } };
  const modified = { metadata: { name }, data: { 'configmap-key': 'configmap-modified-value' } };
  await ctx.core.createNamespacedConfigMap({ namespace: ctx.namespace, body: original });
  const pod = sleepingSubpathPod(
    ctx,
    'pod-subpath-test-configmap-restart',
    { name, configMap: { name } },
    'configmap-key',
    {
      init: `touch ${PROBE_FILE}`,
      sleep: INFINITE_SLEEP_NO_GRACE,
      restartPolicy: 'OnFailure',
      grace: 1,
    },
  );
  const podName = pod.metadata!.name!;
  await testPodContainerRestart(
    ctx,
    pod,
    ['sh', '-c', `cat ${PROBE_FILE} || test \`cat ${VOLUME_PATH}\` = '${modified.data['configmap-key']}'`],
    {
      fail: () => execShellInContainer(ctx, podName, 'test-container-volume', `rm ${PROBE_FILE}`),
      fix: async () => {
        await ctx.core.replaceNamespacedConfigMap({ name, namespace: ctx.namespace, body: modified });
      },
    },
  );
}

const ATOMIC_WRITER_CASES = [
  'should support subpaths with secret pod',
  'should support subpaths with configmap pod',
  'should support subpaths with configmap pod with mountPath of existing file',
  'should support subpaths with downward pod',
  'should support subpaths with projected pod',
];

const SUITE_CASES = [
  'should support non-existent path',
  'should support existing directory',
  'should support existing single file',
  'should support file as subpath',
  'should fail if subpath directory is outside the volume',
  'should fail if subpath file is outside the volume',
  'should fail if non-existent subpath is outside the volume',
  'should fail if subpath with backstepping is outside the volume',
  'should support creating multiple subpath from same volumes',
  'should support restarting containers using directory as subpath',
  'should support restarting containers using file as subpath',
  'should support readOnly directory specified in the volumeMount',
  'should support readOnly file specified in the volumeMount',
  'should be able to unmount after the subpath directory is deleted',
];

/**
 * Mirrors test/e2e/storage/testsuites/subpath.go for the emptydir and hostPath in-tree drivers
 * (inline volume) and the atomic writer (secret, configMap, downwardAPI, projected) and container
 * restart cases of test/e2e/storage/subpath.go: sub-paths that do not
 * exist yet are created inside the volume, files and directories mount by sub-path, and the four
 * traversal cases (a link to a directory, a file, a missing path outside the volume, and `../`)
 * leave the container waiting with CreateContainerConfigError naming subPath. A container killed
 * by its liveness probe starts again on its sub-path (a directory, a file, a config map key that
 * changed meanwhile) and then stays up. The cases that stop the agent are `subpath-disruptive`.
 */
export const subpath: Scenario = {
  name: 'subpath',
  estimateMs: 180_000,
  isolation: 'namespace',
  // Its pods all start at once: beside a probe suite on Docker 26 that burst made RunPodSandbox
  // take 48 s and ExecSync 5-10 s, and liveness probes that must never fail timed out.
  load: 'heavy',
  description:
    'subPath as upstream testsuites/subpath.go checks it on emptyDir, hostPath and configMap volumes; links out of the volume fail with CreateContainerConfigError; containers restarted by their liveness probe start again on their sub-path',
  needs: ['real-containers'],
  // Room for upstream's waits (pod start 5 min, restart 10, a stable minute within 15): CI once cut
  // the restart cases at 420 s, each nine polls short of its stable minute.
  timeoutMs: 900_000,
  upstream: [
    ...drivers.flatMap((d) =>
      SUITE_CASES.map((c) => ({
        file: 'test/e2e/storage/testsuites/subpath.go',
        case: `${pattern(d)} ${c}`,
      })),
    ),
    ...ATOMIC_WRITER_CASES.map((c) => ({
      file: 'test/e2e/storage/subpath.go',
      case: `Subpath Atomic writer volumes ${c}`,
    })),
    {
      file: 'test/e2e/storage/subpath.go',
      case: 'Subpath Container restart should verify that container can restart successfully after configmaps modified',
    },
  ],
  async run(ctx) {
    await allChecks([...drivers.flatMap((d) => driverCases(ctx, d)), atomicWriterCases(ctx)]);
    await allChecks([...drivers.flatMap((d) => driverRestartCases(ctx, d)), configMapModifiedCase(ctx)]);
  },
};
