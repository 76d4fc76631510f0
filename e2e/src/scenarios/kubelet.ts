import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import {
  createPod,
  finished,
  kubectlExec,
  POD_START_MS,
  POD_START_SHORT_MS,
  podFor,
  podLog,
  podSummary,
  readPod,
  sh,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';

// Upstream's kubelet.go, privileged.go and pod_admission.go (test/e2e/common/node) as named cases:
// a container's output in its log (since a time), a failed container's terminated reason, deleting
// a failed pod, hostAliases in /etc/hosts (on the pod network and the host's), a read-only root
// filesystem refusing a write; a privileged container may add a network link and an unprivileged
// one may not; a pod for another OS is rejected with PodOSNotSupported.
const KUBELET = 'test/e2e/common/node/kubelet.go';
const PRIVILEGED = 'test/e2e/common/node/privileged.go';
const POD_ADMISSION = 'test/e2e/common/node/pod_admission.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
const NODE_CONFORMANCE = ['NodeConformance'];

/** The log polls: a minute, every 4 s. */
const LOG_MS = 60_000;
const LOG_POLL_MS = 4_000;

const HOST_ALIAS = { ip: '123.45.67.89', hostnames: ['foo', 'bar'] };

type Case = ScenarioCase;

/** podClient.CreateSync: the pod is created and Running. */
async function createSync(ctx: ScenarioContext, pod: V1Pod): Promise<void> {
  await createPod(ctx, pod);
  await waitForRunning(ctx, pod.metadata!.name!, POD_START_MS);
}

/** The container's log is exactly `want` within a minute; `since` passes --since-time. */
async function logIs(ctx: ScenarioContext, pod: string, container: string, want: string, since?: Date) {
  await ctx.check.eventually(
    `pod ${pod}: the log of ${container} is ${JSON.stringify(want)}`,
    async () => {
      if (!since) return podLog(ctx, pod, container).catch(() => '');
      const r = await ctx.kubectl([
        '-n',
        ctx.namespace,
        'logs',
        pod,
        '-c',
        container,
        `--since-time=${since.toISOString()}`,
      ]);
      return r.code === 0 ? r.stdout : '';
    },
    (log) => log === want,
    { timeoutMs: LOG_MS, intervalMs: LOG_POLL_MS, expected: want },
  );
}

/** The pod that runs /bin/false once, the failing context's BeforeEach. */
const binFalse = (ctx: ScenarioContext, name: string) =>
  createPod(
    ctx,
    podFor(ctx, name, {
      restartPolicy: 'Never',
      containers: [
        { name, image: ctx.images.busybox, imagePullPolicy: 'IfNotPresent', command: ['/bin/false'] },
      ],
    }),
  );

/**
 * agnhost etc-hosts prints /etc/hosts; busybox's cat stands in. Once the pod no longer runs its
 * log must hold the alias line, as the kubelet writes it with or without the host's network.
 */
const hostAliasesCase = (name: string, it: string, tags: readonly string[], hostNetwork: boolean): Case => ({
  file: KUBELET,
  name,
  tags,
  async run(ctx) {
    const pod = `agnhost-host-aliases${hostNetwork ? '-hostnetwork' : ''}`;
    await createPod(
      ctx,
      podFor(ctx, pod, {
        restartPolicy: 'Never',
        ...(hostNetwork ? { hostNetwork: true } : {}),
        hostAliases: [HOST_ALIAS],
        containers: [sh(ctx, 'agnhost-container', 'cat /etc/hosts')],
      }),
    );
    await waitForPod(ctx, pod, 'no longer running', finished, POD_START_MS);
    const log = await podLog(ctx, pod, 'agnhost-container');
    ctx.check.ok(
      `pod ${pod}: ${it}: /etc/hosts has the HostAliases entry`,
      log.includes(`${HOST_ALIAS.ip}\t${HOST_ALIAS.hostnames.join('\t')}`),
      log,
      '123.45.67.89\\tfoo\\tbar',
    );
  },
});

/** `ip link ARGS` in a container of the privileged pod, through kubectl exec. */
const ipLink = (ctx: ScenarioContext, container: string, args: string[]) =>
  kubectlExec(ctx, 'privileged-pod', container, ['ip', 'link', ...args]);

const CASES: Case[] = [
  {
    file: KUBELET,
    name: 'Kubelet when scheduling a busybox command in a pod should print the output to logs',
    tags: CONFORMANCE,
    async run(ctx) {
      const name = 'busybox-scheduling';
      await createSync(
        ctx,
        podFor(ctx, name, {
          restartPolicy: 'Never',
          containers: [sh(ctx, name, "echo 'Hello World' ; sleep 240")],
        }),
      );
      await logIs(ctx, name, name, 'Hello World\n', new Date(Date.now() - 3_600_000));
    },
  },
  {
    file: KUBELET,
    name: 'Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason',
    tags: CONFORMANCE,
    async run(ctx) {
      const name = 'bin-false';
      await binFalse(ctx, name);
      await ctx.check.eventually(
        `pod ${name}: its one container terminated with a non-zero exit code and a reason`,
        () => readPod(ctx, name),
        (p) => {
          const statuses = p.status?.containerStatuses ?? [];
          const t = statuses[0]?.state?.terminated;
          return statuses.length === 1 && !!t && t.exitCode !== 0 && !!t.reason;
        },
        { timeoutMs: POD_START_MS, intervalMs: LOG_POLL_MS, describe: podSummary },
      );
    },
  },
  {
    file: KUBELET,
    name: 'Kubelet when scheduling a busybox command that always fails in a pod should be possible to delete',
    tags: CONFORMANCE,
    async run(ctx) {
      const name = 'bin-false-delete';
      await binFalse(ctx, name);
      const deleted = await ctx.core
        .deleteNamespacedPod({ name, namespace: ctx.namespace })
        .then(() => undefined)
        .catch((err: Error) => err.message);
      ctx.check.ok(`pod ${name}: deleted`, deleted === undefined, deleted, 'no error');
    },
  },
  hostAliasesCase(
    'Kubelet when scheduling an agnhost Pod with hostAliases should write entries to /etc/hosts',
    'on the pod network',
    CONFORMANCE,
    false,
  ),
  {
    file: KUBELET,
    name: 'Kubelet when scheduling a read only busybox container should not write to root filesystem [LinuxOnly]',
    tags: CONFORMANCE,
    async run(ctx) {
      const name = 'busybox-readonly-fs';
      await createSync(
        ctx,
        podFor(ctx, name, {
          restartPolicy: 'Never',
          containers: [
            {
              name,
              image: ctx.images.busybox,
              imagePullPolicy: 'IfNotPresent',
              // /bin/sh, not sh: the shell names itself so in the error upstream matches.
              command: ['/bin/sh', '-c', 'echo test > /file; sleep 240'],
              securityContext: { readOnlyRootFilesystem: true },
            },
          ],
        }),
      );
      await logIs(ctx, name, name, "/bin/sh: can't create /file: Read-only file system\n");
    },
  },
  hostAliasesCase(
    'Kubelet with pods in a privileged namespace when scheduling an agnhost Pod with hostAliases and hostNetwork should write entries to /etc/hosts when hostNetwork is enabled',
    'on the host network',
    NODE_CONFORMANCE,
    true,
  ),
  {
    file: PRIVILEGED,
    name: 'PrivilegedPod should enable privileged commands [LinuxOnly]',
    tags: NODE_CONFORMANCE,
    async run(ctx) {
      const sleeper = (name: string, privileged: boolean) => ({
        name,
        image: ctx.images.busybox,
        imagePullPolicy: 'IfNotPresent' as const,
        securityContext: { privileged },
        command: ['/bin/sleep', '10000'],
      });
      await createSync(
        ctx,
        podFor(ctx, 'privileged-pod', {
          containers: [sleeper('privileged-container', true), sleeper('not-privileged-container', false)],
        }),
      );
      // Upstream adds a dummy link. A kernel without the dummy type (the harness machine's: no
      // module, no modprobe) answers EOPNOTSUPP even to a privileged container: a veth link,
      // built into such kernels and needing the same CAP_NET_ADMIN, stands in then, with a note.
      let add = ['add', 'dummy1', 'type', 'dummy'];
      let privileged = await ipLink(ctx, 'privileged-container', add);
      if (privileged.code !== 0 && /Operation not supported/.test(privileged.stderr)) {
        ctx.note('the kernel has no dummy link type: the privileged commands add a veth link instead', {
          stderr: privileged.stderr.trim(),
        });
        add = ['add', 'dummy1', 'type', 'veth'];
        privileged = await ipLink(ctx, 'privileged-container', add);
      }
      ctx.check.equal(
        `the privileged container runs ip link ${add.join(' ')}`,
        { code: privileged.code, stderr: privileged.stderr.trim() },
        { code: 0, stderr: '' },
      );
      const del = await ipLink(ctx, 'privileged-container', ['del', 'dummy1']);
      ctx.check.equal('the privileged container removes link dummy1', del.code, 0);
      const unprivileged = await ipLink(ctx, 'not-privileged-container', add);
      ctx.check.ok(
        'the unprivileged container cannot add a link',
        unprivileged.code !== 0,
        { code: unprivileged.code, stdout: unprivileged.stdout, stderr: unprivileged.stderr },
        'a failed exec',
      );
    },
  },
  {
    file: POD_ADMISSION,
    name: "PodOSRejection Kubelet [LinuxOnly] should reject pod when the node OS doesn't match pod's OS",
    tags: NODE_CONFORMANCE,
    async run(ctx) {
      // findLinuxNode: the node under test is a Linux node.
      const node = await ctx.core.readNode({ name: ctx.nodeName });
      ctx.check.equal(
        'the node is labelled kubernetes.io/os=linux',
        node.metadata?.labels?.['kubernetes.io/os'],
        'linux',
      );
      const name = 'wrong-pod-os';
      await createPod(
        ctx,
        podFor(ctx, name, {
          os: { name: 'windows' },
          containers: [{ name, image: ctx.images.pause, imagePullPolicy: 'IfNotPresent' }],
        }),
      );
      await ctx.check.eventually(
        `pod ${name} Failed with reason PodOSNotSupported`,
        () => readPod(ctx, name),
        (p) => p.status?.phase === 'Failed' && p.status.reason === 'PodOSNotSupported',
        {
          timeoutMs: POD_START_SHORT_MS,
          expected: 'phase Failed, reason PodOSNotSupported',
          describe: podSummary,
        },
      );
    },
  },
];

export const kubelet: CasesScenario = {
  name: 'kubelet',
  estimateMs: 30_000,
  isolation: 'namespace',
  description:
    "kubelet.go, privileged.go and pod_admission.go cases: log output (since a time), a failed container's terminated reason, deleting a failed pod, hostAliases in /etc/hosts with and without hostNetwork, a read-only root filesystem; privileged and unprivileged `ip link add`; PodOSNotSupported",
  needs: ['real-containers'],
  // Room past upstream's 5 min pod start (CreateSync) for the minute of log polls after it.
  timeoutMs: 420_000,
  cases: CASES,
};
