import { isIP } from 'node:net';
import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Container, V1EnvVar, V1Pod, V1PodSpec, V1VolumeMount } from '@kubernetes/client-node';
import {
  createPod,
  deletePodWithWait,
  kubectlExec,
  type LogMatcher,
  POD_START_SHORT_MS,
  podFor,
  podLog,
  podSummary,
  readPod,
  testContainerOutput,
  waitForPod,
  waitingReason,
} from '../support/pods.js';

// Upstream's containers.go, expansion.go, kubelet_etc_hosts.go and downwardapi.go
// (test/e2e/common/node), one named case per It with upstream's pods and expectations, the cases
// of a file side by side in one cell.
const CONTAINERS_FILE = 'test/e2e/common/node/containers.go';
const EXPANSION_FILE = 'test/e2e/common/node/expansion.go';
const ETC_HOSTS_FILE = 'test/e2e/common/node/kubelet_etc_hosts.go';
const DOWNWARD_API_FILE = 'test/e2e/common/node/downwardapi.go';

type Case = ScenarioCase<void>;

const CONFORMANCE = ['NodeConformance', 'Conformance'];
/** Room past upstream's 5 min pod waits (PodStart) for the rest of a case. */
const GUARD_MS = 420_000;

const running = (p: V1Pod) => p.status?.phase === 'Running';

/** A restartPolicy Never pod of one container. */
function onePod(ctx: ScenarioContext, name: string, container: V1Container, spec: Partial<V1PodSpec> = {}) {
  return podFor(ctx, name, { restartPolicy: 'Never', containers: [container], ...spec });
}

/** TestContainerOutput of the pod's one container. */
const testOutput = (ctx: ScenarioContext, pod: V1Pod, expected: (string | LogMatcher)[]) =>
  testContainerOutput(ctx, pod, pod.spec?.containers[0]?.name ?? '', expected);

/** ExecShellInPod / ExecCommandInContainer: kubectl exec, its output and exit code. */
async function exec(ctx: ScenarioContext, pod: string, container: string, command: string[]) {
  const r = await kubectlExec(ctx, pod, container, command);
  return { stdout: r.stdout, code: r.code };
}

// --- containers.go -----------------------------------------------------------------------------

/**
 * entrypointTestPod: upstream runs agnhost (ENTRYPOINT /agnhost, CMD pause); the `entrypoint`
 * image has the same ENTRYPOINT and CMD and prints what agnhost's pause and entrypoint-tester print.
 */
function entrypointTestPod(ctx: ScenarioContext, name: string, over: Partial<V1Container>): V1Pod {
  return onePod(
    ctx,
    name,
    { name: 'agnhost-container', image: ctx.images.entrypoint, imagePullPolicy: 'IfNotPresent', ...over },
    { terminationGracePeriodSeconds: 1 },
  );
}

const containersCase = (it: string, name: string, over: Partial<V1Container>, want: string): Case => ({
  file: CONTAINERS_FILE,
  name: `Containers ${it}`,
  tags: CONFORMANCE,
  run: (ctx) => testOutput(ctx, entrypointTestPod(ctx, name, over), [want]),
});

const CONTAINERS_CASES: Case[] = [
  {
    file: CONTAINERS_FILE,
    name: 'Containers should use the image defaults if command and args are blank',
    tags: CONFORMANCE,
    async run(ctx) {
      const name = 'client-containers-defaults';
      await createPod(ctx, entrypointTestPod(ctx, name, {}));
      await waitForPod(ctx, name, 'running', running);
      // gomega.Eventually(pollLogs, 3, framework.Poll): "Paused" within 3 s of Running.
      await ctx.check.eventually(
        `pod ${name} log contains "Paused"`,
        () => podLog(ctx, name, 'agnhost-container'),
        (log) => log.includes('Paused'),
        { timeoutMs: 3_000, intervalMs: 500, expected: 'Paused' },
      );
    },
  },
  containersCase(
    "should be able to override the image's default arguments (container cmd)",
    'client-containers-args',
    { args: ['entrypoint-tester', 'override', 'arguments'] },
    '[/agnhost entrypoint-tester override arguments]',
  ),
  // Overriding the entrypoint drops the image's arguments (CMD) too.
  containersCase(
    "should be able to override the image's default command (container entrypoint)",
    'client-containers-command',
    { command: ['/agnhost-2'], args: ['entrypoint-tester'] },
    '[/agnhost-2 entrypoint-tester]',
  ),
  containersCase(
    "should be able to override the image's default command and arguments",
    'client-containers-both',
    { command: ['/agnhost-2'], args: ['entrypoint-tester', 'override', 'arguments'] },
    '[/agnhost-2 entrypoint-tester override arguments]',
  ),
];

export const containers: CasesScenario<void> = {
  name: 'containers',
  estimateMs: 10_000,
  isolation: 'namespace',
  description:
    "containers.go: the image's ENTRYPOINT and CMD by default, args replacing CMD, command replacing both, on the entrypoint image (agnhost's pause and entrypoint-tester)",
  needs: ['real-containers'],
  timeoutMs: GUARD_MS,
  cases: CONTAINERS_CASES,
};

// --- expansion.go ------------------------------------------------------------------------------

const EXPANSION = 'Variable Expansion';
const SLOW_CONFORMANCE = ['Slow', 'Conformance'];

/** newPod: busybox as dapi-container, restartPolicy Never. */
function expansionPod(
  ctx: ScenarioContext,
  name: string,
  container: Partial<V1Container>,
  spec: Partial<V1PodSpec> = {},
): V1Pod {
  return onePod(
    ctx,
    name,
    { name: 'dapi-container', image: ctx.images.busybox, imagePullPolicy: 'IfNotPresent', ...container },
    spec,
  );
}

const WORKDIR = [{ name: 'workdir1', emptyDir: {} }];
const ANNOTATION_ENV: V1EnvVar[] = [
  { name: 'POD_NAME', value: 'foo' },
  {
    name: 'ANNOTATION',
    valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['mysubpath']" } },
  },
];
const ANNOTATION_MOUNTS: V1VolumeMount[] = [
  { name: 'workdir1', mountPath: '/subpath_mount', subPathExpr: '$(ANNOTATION)/$(POD_NAME)' },
  { name: 'workdir1', mountPath: '/volume_mount' },
];

/** An annotated pod whose sub-path comes from its mysubpath annotation, and stays up. */
function annotatedPod(ctx: ScenarioContext, name: string, annotations: Record<string, string>): V1Pod {
  const pod = expansionPod(
    ctx,
    name,
    { command: ['sh', '-c', 'tail -f /dev/null'], env: ANNOTATION_ENV, volumeMounts: ANNOTATION_MOUNTS },
    { volumes: WORKDIR },
  );
  pod.metadata = { ...pod.metadata, annotations };
  return pod;
}

const setAnnotation = (ctx: ScenarioContext, name: string, value: string) =>
  ctx.core.patchNamespacedPod({
    namespace: ctx.namespace,
    name,
    body: [{ op: 'add', path: '/metadata/annotations/mysubpath', value }],
  });

/** WaitTimeoutForPodRunningInNamespace with PodStartShortTimeout. */
const waitRunning = (ctx: ScenarioContext, name: string) =>
  waitForPod(ctx, name, 'running', running, POD_START_SHORT_MS);

/** testPodFailSubpath: the container waits with CreateContainerConfigError (WaitForPodContainerToFail). */
const failSubpathCase = (it: string, name: string, value: string): Case => ({
  file: EXPANSION_FILE,
  name: `${EXPANSION} ${it}`,
  tags: SLOW_CONFORMANCE,
  async run(ctx) {
    await createPod(
      ctx,
      expansionPod(
        ctx,
        name,
        {
          env: [{ name: 'POD_NAME', value }],
          volumeMounts: [{ name: 'workdir1', mountPath: '/logscontainer', subPathExpr: '$(POD_NAME)' }],
        },
        { volumes: WORKDIR },
      ),
    );
    await waitForPod(
      ctx,
      name,
      'has dapi-container waiting with CreateContainerConfigError',
      (p) => waitingReason(p, 'dapi-container') === 'CreateContainerConfigError',
      POD_START_SHORT_MS,
    );
    // Upstream's deferred delete checks nothing; the cell's namespace goes with the pod.
  },
});

const EXPANSION_CASES: Case[] = [
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should allow composing env vars into new env vars`,
    tags: CONFORMANCE,
    run: (ctx) =>
      testOutput(
        ctx,
        expansionPod(ctx, 'var-expansion-env', {
          command: ['sh', '-c', 'env'],
          env: [
            { name: 'FOO', value: 'foo-value' },
            { name: 'BAR', value: 'bar-value' },
            { name: 'FOOBAR', value: '$(FOO);;$(BAR)' },
          ],
        }),
        ['FOO=foo-value', 'BAR=bar-value', 'FOOBAR=foo-value;;bar-value'],
      ),
  },
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should allow substituting values in a container's command`,
    tags: CONFORMANCE,
    run: (ctx) =>
      testOutput(
        ctx,
        expansionPod(ctx, 'var-expansion-command', {
          command: ['sh', '-c', 'TEST_VAR=wrong echo "$(TEST_VAR)"'],
          env: [{ name: 'TEST_VAR', value: 'test-value' }],
        }),
        ['test-value'],
      ),
  },
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should allow substituting values in a container's args`,
    tags: CONFORMANCE,
    run: (ctx) =>
      testOutput(
        ctx,
        expansionPod(ctx, 'var-expansion-args', {
          command: ['sh', '-c'],
          args: ['TEST_VAR=wrong echo "$(TEST_VAR)"'],
          env: [{ name: 'TEST_VAR', value: 'test-value' }],
        }),
        ['test-value'],
      ),
  },
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should allow substituting values in a volume subpath`,
    tags: ['Conformance'],
    run(ctx) {
      const name = 'var-expansion-subpath';
      return testOutput(
        ctx,
        expansionPod(
          ctx,
          name,
          {
            command: ['sh', '-c', `test -d /testcontainer/${name};echo $?`],
            env: [{ name: 'POD_NAME', value: name }],
            volumeMounts: [
              { name: 'workdir1', mountPath: '/logscontainer', subPathExpr: '$(POD_NAME)' },
              { name: 'workdir1', mountPath: '/testcontainer' },
            ],
          },
          { volumes: WORKDIR },
        ),
        ['0'],
      );
    },
  },
  failSubpathCase(
    'should fail substituting values in a volume subpath with backticks',
    'var-expansion-backticks',
    '..',
  ),
  failSubpathCase(
    'should fail substituting values in a volume subpath with absolute path',
    'var-expansion-absolute',
    '/tmp',
  ),
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should verify that a failing subpath expansion can be modified during the lifecycle of a container`,
    tags: SLOW_CONFORMANCE,
    async run(ctx) {
      // Without the annotation the sub-path is "/foo", absolute: the container cannot start.
      const name = 'var-expansion-modified';
      await createPod(ctx, annotatedPod(ctx, name, { notmysubpath: 'mypath' }));
      // ExpectError(WaitTimeoutForPodRunningInNamespace): not Running for all of PodStartShortTimeout.
      const start = Date.now();
      let seen = await readPod(ctx, name);
      while (Date.now() - start < POD_START_SHORT_MS && !running(seen)) {
        await ctx.sleep(2_000);
        seen = await readPod(ctx, name);
      }
      ctx.check.ok(
        `pod ${name} is not running within ${POD_START_SHORT_MS / 1000} s without the annotation`,
        !running(seen),
        podSummary(seen),
        'not Running',
      );
      await setAnnotation(ctx, name, 'mypath');
      await waitRunning(ctx, name);
      await deletePodWithWait(ctx, name);
    },
  },
  {
    file: EXPANSION_FILE,
    name: `${EXPANSION} should succeed in writing subpaths in container`,
    tags: SLOW_CONFORMANCE,
    async run(ctx) {
      const name = 'var-expansion-writes';
      await createPod(ctx, annotatedPod(ctx, name, { mysubpath: 'mypath' }));
      await waitRunning(ctx, name);
      const write = await exec(ctx, name, 'dapi-container', [
        '/bin/sh',
        '-c',
        'touch /volume_mount/mypath/foo/test.log',
      ]);
      ctx.check.equal(`pod ${name}: can write to the sub-path through the volume`, write.code, 0);
      const read = await exec(ctx, name, 'dapi-container', [
        '/bin/sh',
        '-c',
        'test -f /subpath_mount/test.log',
      ]);
      ctx.check.equal(`pod ${name}: the file is in the sub-path mount`, read.code, 0);
      // A changed annotation does not touch the running container; cleanup needs no new expansion.
      await setAnnotation(ctx, name, 'mynewpath');
      await waitRunning(ctx, name);
      await deletePodWithWait(ctx, name);
    },
  },
];

export const variableExpansion: CasesScenario<void> = {
  name: 'variable-expansion',
  // The lifecycle case holds upstream's PodStartShortTimeout (2 min) window of "not running".
  estimateMs: 140_000,
  isolation: 'namespace',
  description:
    'expansion.go: $(VAR) in env, command and args; subPathExpr from an env and from an annotation (a bad one, `..` or absolute, is CreateContainerConfigError; fixing the annotation lets the container start)',
  needs: ['real-containers'],
  // The lifecycle case: its 2 min window, up to 2 min to run, then DeletePodWithWait (PodDelete).
  timeoutMs: 540_000,
  cases: EXPANSION_CASES,
};

// --- kubelet_etc_hosts.go ----------------------------------------------------------------------

const HOSTS_HEADER = '# Kubernetes-managed hosts file.';

/** Upstream's agnhost containers only need to stay up; busybox sleeps instead. */
function etcHostsContainer(ctx: ScenarioContext, name: string, mounts: V1VolumeMount[]): V1Container {
  return {
    name,
    image: ctx.images.busybox,
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', "trap 'exit 0' TERM; sleep 2147483647 & wait"],
    volumeMounts: mounts,
  };
}

/**
 * assertManagedStatus: within 30 s, /etc/hosts and the node's file (hostPath at /etc/hosts-original)
 * both read non-empty and /etc/hosts is managed (the header, and differs from the node's) or not.
 */
async function assertManagedStatus(ctx: ScenarioContext, pod: string, container: string, managed: boolean) {
  await ctx.check.eventually(
    `pod ${pod} container ${container}: /etc/hosts is ${managed ? '' : 'not '}kubelet-managed`,
    async () => ({
      hosts: (await exec(ctx, pod, container, ['cat', '/etc/hosts'])).stdout,
      original: (await exec(ctx, pod, container, ['cat', '/etc/hosts-original'])).stdout,
    }),
    ({ hosts, original }) =>
      hosts.length > 0 &&
      original.length > 0 &&
      (hosts.startsWith(HOSTS_HEADER) && hosts !== original) === managed,
    { timeoutMs: 30_000, intervalMs: 100, expected: managed ? 'managed' : 'not managed' },
  );
}

const ETC_HOSTS_CASE: Case = {
  file: ETC_HOSTS_FILE,
  name: 'KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [LinuxOnly]',
  tags: CONFORMANCE,
  async run(ctx) {
    const original: V1VolumeMount = { name: 'host-etc-hosts', mountPath: '/etc/hosts-original' };
    const volumes = [{ name: 'host-etc-hosts', hostPath: { path: '/etc/hosts', type: 'FileOrCreate' } }];
    await createPod(
      ctx,
      podFor(ctx, 'test-pod', {
        containers: [
          etcHostsContainer(ctx, 'busybox-1', [original]),
          etcHostsContainer(ctx, 'busybox-2', [original]),
          etcHostsContainer(ctx, 'busybox-3', [
            original,
            { name: 'host-etc-hosts', mountPath: '/etc/hosts' },
          ]),
        ],
        volumes,
      }),
    );
    await createPod(
      ctx,
      podFor(ctx, 'test-host-network-pod', {
        hostNetwork: true,
        securityContext: {},
        containers: [
          etcHostsContainer(ctx, 'busybox-1', [original]),
          etcHostsContainer(ctx, 'busybox-2', [original]),
        ],
        volumes,
      }),
    );
    // CreateSync: both running before any check.
    await Promise.all(
      ['test-pod', 'test-host-network-pod'].map((p) => waitForPod(ctx, p, 'running', running)),
    );
    await assertManagedStatus(ctx, 'test-pod', 'busybox-1', true);
    await assertManagedStatus(ctx, 'test-pod', 'busybox-2', true);
    // The container mounts a file at /etc/hosts itself.
    await assertManagedStatus(ctx, 'test-pod', 'busybox-3', false);
    await assertManagedStatus(ctx, 'test-host-network-pod', 'busybox-1', false);
    await assertManagedStatus(ctx, 'test-host-network-pod', 'busybox-2', false);
  },
};

export const kubeletEtcHosts: CasesScenario<void> = {
  name: 'kubelet-etc-hosts',
  estimateMs: 15_000,
  isolation: 'namespace',
  description:
    "kubelet_etc_hosts.go: the kubelet's managed /etc/hosts in a pod's containers, not in one that mounts the node's file there, not in a hostNetwork pod's",
  needs: ['real-containers'],
  timeoutMs: GUARD_MS,
  cases: [ETC_HOSTS_CASE],
};

// --- downwardapi.go ----------------------------------------------------------------------------

const DOWNWARD_API = 'Downward API';
const HUGEPAGES_CONTEXT = 'Downward API Downward API tests for hugepages';
const field = (name: string, fieldPath: string): V1EnvVar => ({
  name,
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } },
});
const resource = (name: string, res: string): V1EnvVar => ({
  name,
  valueFrom: { resourceFieldRef: { resource: res } },
});

/** testDownwardAPI's container: `env`, with requests 250m/32Mi and limits 1250m/64Mi. */
const dapiContainer = (
  ctx: ScenarioContext,
  env: V1EnvVar[],
  over: Partial<V1Container> = {},
): V1Container => ({
  name: 'dapi-container',
  image: ctx.images.busybox,
  imagePullPolicy: 'IfNotPresent',
  command: ['sh', '-c', 'env'],
  resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '1250m', memory: '64Mi' } },
  env,
  ...over,
});

/**
 * A line `NAME=<an IPv4 or IPv6 address>`: upstream's e2enetwork.RegexIPv4|RegexIPv6 pattern,
 * checked with node:net's parser instead of upstream's long IPv6 expression.
 */
function ipLine(name: string): LogMatcher {
  const line = new RegExp(`^${name}=(.*)$`, 'm');
  return {
    test: (log) => isIP(line.exec(log)?.[1] ?? '') !== 0,
    toString: () => `${name}=<IPv4|IPv6>`,
  };
}

const downwardCase = (
  it: string,
  tags: string[],
  pod: (ctx: ScenarioContext) => V1Pod,
  expected: (ctx: ScenarioContext) => (string | LogMatcher)[],
  describe = DOWNWARD_API,
): Case => ({
  file: DOWNWARD_API_FILE,
  name: `${describe} ${it}`,
  tags,
  run: (ctx) => testOutput(ctx, pod(ctx), expected(ctx)),
});

const HOST_IP_ENV = [field('HOST_IP', 'status.hostIP')];
/** Upstream's hugepages Describe is Serial and Disruptive; its pods ask for no hugepages at all. */
const HUGEPAGES_TAGS = ['Serial', 'Disruptive', 'Feature:DownwardAPIHugePages'];

const DOWNWARD_API_CASES: Case[] = [
  downwardCase(
    'should provide pod name, namespace and IP address as env vars',
    CONFORMANCE,
    (ctx) =>
      onePod(
        ctx,
        'downward-api-names',
        dapiContainer(ctx, [
          field('POD_NAME', 'metadata.name'),
          field('POD_NAMESPACE', 'metadata.namespace'),
          field('POD_IP', 'status.podIP'),
        ]),
      ),
    (ctx) => [/POD_NAME=downward-api-names/, new RegExp(`POD_NAMESPACE=${ctx.namespace}`), ipLine('POD_IP')],
  ),
  downwardCase(
    'should provide host IP as an env var',
    CONFORMANCE,
    (ctx) => onePod(ctx, 'downward-api-host-ip', dapiContainer(ctx, HOST_IP_ENV)),
    () => [ipLine('HOST_IP')],
  ),
  downwardCase(
    'should provide hostIPs as an env var',
    CONFORMANCE,
    (ctx) => onePod(ctx, 'downward-api-host-ips', dapiContainer(ctx, HOST_IP_ENV)),
    () => [ipLine('HOST_IP')],
  ),
  downwardCase(
    'should provide host IP and pod IP as an env var if pod uses host network [LinuxOnly]',
    [],
    (ctx) =>
      onePod(
        ctx,
        'downward-api-host-network',
        dapiContainer(ctx, [field('HOST_IP', 'status.hostIP'), field('POD_IP', 'status.podIP')], {
          command: [
            'sh',
            '-c',
            `[[ "\${HOST_IP:?}" == "\${POD_IP:?}" ]] && echo 'OK' || echo "HOST_IP: '\${HOST_IP}' != POD_IP: '\${POD_IP}'"`,
          ],
          resources: {},
        }),
        { hostNetwork: true },
      ),
    () => [/OK/],
  ),
  downwardCase(
    "should provide container's limits.cpu/memory and requests.cpu/memory as env vars",
    CONFORMANCE,
    (ctx) =>
      onePod(
        ctx,
        'downward-api-resources',
        dapiContainer(ctx, [
          resource('CPU_LIMIT', 'limits.cpu'),
          resource('MEMORY_LIMIT', 'limits.memory'),
          resource('CPU_REQUEST', 'requests.cpu'),
          resource('MEMORY_REQUEST', 'requests.memory'),
        ]),
      ),
    () => [/CPU_LIMIT=2/, /MEMORY_LIMIT=67108864/, /CPU_REQUEST=1/, /MEMORY_REQUEST=33554432/],
  ),
  downwardCase(
    'should provide default limits.cpu/memory from node allocatable',
    CONFORMANCE,
    (ctx) =>
      onePod(
        ctx,
        'downward-api-default-limits',
        dapiContainer(ctx, [resource('CPU_LIMIT', 'limits.cpu'), resource('MEMORY_LIMIT', 'limits.memory')], {
          resources: {},
        }),
      ),
    () => [/CPU_LIMIT=[1-9]/, /MEMORY_LIMIT=[1-9]/],
  ),
  downwardCase(
    'should provide pod UID as env vars',
    CONFORMANCE,
    (ctx) => onePod(ctx, 'downward-api-uid', dapiContainer(ctx, [field('POD_UID', 'metadata.uid')])),
    () => [/POD_UID=[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}/],
  ),
  downwardCase(
    "should provide container's limits.hugepages-<pagesize> and requests.hugepages-<pagesize> as env vars",
    HUGEPAGES_TAGS,
    (ctx) =>
      onePod(
        ctx,
        'downward-api-hugepages',
        dapiContainer(
          ctx,
          [
            resource('HUGEPAGES_LIMIT', 'limits.hugepages-2Mi'),
            resource('HUGEPAGES_REQUEST', 'requests.hugepages-2Mi'),
          ],
          {
            resources: {
              requests: { cpu: '10m', 'hugepages-2Mi': '0Mi' },
              limits: { 'hugepages-2Mi': '0Mi' },
            },
          },
        ),
      ),
    () => [/HUGEPAGES_LIMIT=0/, /HUGEPAGES_REQUEST=0/],
    HUGEPAGES_CONTEXT,
  ),
  downwardCase(
    'should provide default limits.hugepages-<pagesize> from node allocatable',
    HUGEPAGES_TAGS,
    (ctx) =>
      onePod(
        ctx,
        'downward-api-hugepages-default',
        dapiContainer(ctx, [resource('HUGEPAGES_LIMIT', 'limits.hugepages-2Mi')], { resources: {} }),
      ),
    () => [/HUGEPAGES_LIMIT=((0)|([1-9][0-9]*))\n/],
    HUGEPAGES_CONTEXT,
  ),
];

export const downwardApi: CasesScenario<void> = {
  name: 'downward-api',
  estimateMs: 12_000,
  isolation: 'namespace',
  description:
    "downwardapi.go env cases: pod name, namespace, IP and UID, host IP, a hostNetwork pod's pod IP equal to its host IP, limits and requests, limits defaulted from node allocatable, hugepages (none asked for: 0)",
  needs: ['real-containers'],
  timeoutMs: GUARD_MS,
  cases: DOWNWARD_API_CASES,
};
