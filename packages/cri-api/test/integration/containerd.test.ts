/**
 * The typed client against a real containerd 1.6 CRI, in a node container built from the
 * testkit image recipes: the same calls the fake runtime answers in the unit tests.
 * Needs a Docker engine and the host tools (`sudo npm run setup`); images are built on demand.
 */

import { existsSync } from 'node:fs';
import { normalizeImageRef } from '@kh/apimachinery';
import {
  ensureImages,
  type ImageRefs,
  NodeContainer,
  RegistryContainer,
  removeLeftovers,
  runId,
  type StartedNodeContainer,
  type StartedRegistryContainer,
  type StartedTestNetwork,
  TestNetwork,
} from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ContainerState, CriClient, isNotFound, NotFoundError, PodSandboxState } from '../../src/index.js';

const SETUP_TIMEOUT = 300_000; // a cold cache builds the node image (~1.5 min)
const TEST_TIMEOUT = 60_000;

let refs: ImageRefs<'node' | 'pause' | 'busybox'>;
let network: StartedTestNetwork;
let node: StartedNodeContainer;
let client: CriClient;
let busybox: string;

beforeAll(async () => {
  refs = await ensureImages(['node', 'pause', 'busybox'], { progress: (l) => console.log(l) });
  network = await new TestNetwork().start();
  node = await new NodeContainer(refs.node)
    .withRuntime('containerd')
    .withNetwork(network)
    .withImages(refs.busybox)
    .withProgress((l) => console.log(l))
    .start();
  console.log(`containerd CRI ready ${Math.round(node.readyAfterMs)} ms after start()`);
  client = await CriClient.connect(node.criEndpointOnHost);
  busybox = normalizeImageRef(refs.busybox);
}, SETUP_TIMEOUT);

afterAll(async () => {
  client?.close();
  await node?.stop();
  await network?.stop();
  await removeLeftovers({ runId });
}, SETUP_TIMEOUT);

function podConfig(name: string) {
  const uid = `${name}-${runId}`;
  return {
    metadata: { name, uid, namespace: 'default', attempt: 0 },
    hostname: name,
    logDirectory: `/var/log/pods/default_${name}_${uid}`,
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': uid,
    },
    linux: { cgroupParent: node.cgroupParent },
  };
}

describe('CriClient against containerd in a node container', () => {
  test(
    'Version names containerd and CRI v1',
    async () => {
      const v = await client.version({});
      expect(v.runtimeName).toBe('containerd');
      expect(v.runtimeApiVersion).toBe('v1');
    },
    TEST_TIMEOUT,
  );

  test(
    'RunPodSandbox, CreateContainer, StartContainer, ExecSync, then stop and remove everything',
    async () => {
      const config = podConfig('exec-pod');
      const { podSandboxId } = await client.runPodSandbox({ config });
      expect(podSandboxId).toMatch(/^[0-9a-f]{64}$/);

      const sandbox = (await client.podSandboxStatus({ podSandboxId })).status!;
      expect(sandbox.state).toBe(PodSandboxState.SANDBOX_READY);
      expect(sandbox.metadata?.name).toBe('exec-pod');
      expect(sandbox.network?.ip).toMatch(/^10\.88\./); // from the node's CNI bridge
      // cgroup_parent is honoured: the sandbox nests under the node container's own cgroup.
      expect(existsSync(`/sys/fs/cgroup/memory${node.cgroupParent}/${podSandboxId}`)).toBe(true);

      const { containerId } = await client.createContainer({
        podSandboxId,
        sandboxConfig: config,
        config: {
          metadata: { name: 'shell', attempt: 0 },
          image: { image: busybox },
          command: ['sh', '-c', 'echo started; exec sleep 3600'],
          logPath: 'shell/0.log',
          labels: { 'io.kubernetes.container.name': 'shell' },
        },
      });
      await client.startContainer({ containerId });
      const running = (await client.containerStatus({ containerId })).status!;
      expect(running.state).toBe(ContainerState.CONTAINER_RUNNING);
      expect(running.startedAt).toBeGreaterThan(0n);
      expect(running.image?.image).toBe(busybox);

      const ok = await client.execSync({
        containerId,
        cmd: ['sh', '-c', 'echo hello from $(hostname)'],
        timeout: 10n,
      });
      expect(ok.exitCode).toBe(0);
      expect(ok.stdout.toString()).toBe('hello from exec-pod\n');
      const failing = await client.execSync({
        containerId,
        cmd: ['sh', '-c', 'echo oops >&2; exit 3'],
        timeout: 10n,
      });
      expect(failing.exitCode).toBe(3);
      expect(failing.stderr.toString()).toBe('oops\n');

      const listed = await client.listContainers({ filter: { podSandboxId } });
      expect(listed.containers.map((c) => c.id)).toEqual([containerId]);
      // The container's output lands in the pod's log directory, in CRI log format.
      const log = await node.execOk(['cat', `${config.logDirectory}/shell/0.log`]);
      expect(log).toMatch(/^\S+ stdout F started$/m);

      await client.stopContainer({ containerId, timeout: 0n });
      const exited = (await client.containerStatus({ containerId })).status!;
      expect(exited.state).toBe(ContainerState.CONTAINER_EXITED);
      expect(exited.finishedAt).toBeGreaterThan(0n);
      await client.removeContainer({ containerId });
      await client.stopPodSandbox({ podSandboxId });
      await client.removePodSandbox({ podSandboxId });

      expect((await client.listContainers({})).containers).toEqual([]);
      expect((await client.listPodSandbox({})).items).toEqual([]);
      const gone = await client.podSandboxStatus({ podSandboxId }).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(NotFoundError);
    },
    TEST_TIMEOUT,
  );

  test(
    'unknown ids come back as typed NotFound errors',
    async () => {
      const err = await client.containerStatus({ containerId: 'does-not-exist' }).catch((e: unknown) => e);
      expect(isNotFound(err)).toBe(true);
      expect((err as Error).message).toMatch(/does-not-exist/);
    },
    TEST_TIMEOUT,
  );

  describe('PullImage from a registry with basic auth', () => {
    let registry: StartedRegistryContainer;
    let ref: string;

    beforeAll(async () => {
      registry = await new RegistryContainer(refs.node).withNetwork(network).withBasicAuth('kh').start();
      ref = await registry.push(refs.busybox, 'kh/busybox:cri');
    }, SETUP_TIMEOUT);

    afterAll(() => registry?.stop());

    test(
      'fails without credentials and succeeds with them',
      async () => {
        const denied = await client.pullImage({ image: { image: ref } }).catch((e: unknown) => e);
        expect((denied as Error).message).toMatch(/401|unauthorized|authorization failed/i);
        const pulled = await client.pullImage({ image: { image: ref }, auth: registry.authConfig });
        expect(pulled.imageRef).toMatch(/^sha256:/);
        const status = await client.imageStatus({ image: { image: ref } });
        expect(status.image?.repoTags).toContain(ref);
      },
      TEST_TIMEOUT,
    );

    test(
      'a missing tag is NotFound',
      async () => {
        const err = await client
          .pullImage({ image: { image: 'registry:5000/kh/busybox:missing' }, auth: registry.authConfig })
          .catch((e: unknown) => e);
        expect(isNotFound(err)).toBe(true);
      },
      TEST_TIMEOUT,
    );
  });

  test(
    'stopping the node leaves no container, network or socket directory behind',
    async () => {
      client.close();
      await node.stop();
      await network.stop();
      expect(existsSync(node.sharedDirOnHost)).toBe(false);
      // removeLeftovers counts what it had to remove for this run: nothing.
      expect(await removeLeftovers({ runId })).toEqual({ containers: 0, networks: 0, volumes: 0 });
    },
    TEST_TIMEOUT,
  );
});
