// The agent against real containerd: a testkit node container runs containerd; the agent runs
// on the host against the node's CRI socket, with pod logs and termination messages in the
// node's shared directory (a path mapping), and pods under the node's cgroup. A pod applied with
// kubectl reaches Running with a containerd:// container ID and a CNI pod IP, and kubectl delete
// completes once the agent has stopped it.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState } from '@kh/cri-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { run } from '../src/cli.js';
import { cgroupRootForKubepods } from '../src/cm/cgroup_name.js';
import { parseFlags } from '../src/config/flags.js';
import { loadKubeletConfiguration } from '../src/config/load.js';
import { runtimeSandboxImage } from '../src/runtime/sandbox_image.js';
import { silentLogger, stderrLogger } from '../src/util/log.js';
import { loopbackFlags } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { type ContainerdTestNode, startContainerdNode } from './helpers/containerd.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-containerd-'));
let containerd: ContainerdTestNode<'busybox'> | undefined;
let apiserver: TestApiServer | undefined;
let kubeconfig: string;
let api: KubeNodeApi;
let busybox: string;
let kubeletPort: number;
let certFile: string;
const abort = new AbortController();
let agent: Promise<void> | undefined;
const logs: string[] = [];

function httpsGet(port: number, path: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, ca }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode} ${body}`)),
      );
    })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  containerd = await startContainerdNode(['busybox']);
  const { node, refs } = containerd;
  busybox = `docker.io/${refs.busybox}`;
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
  const flags = parseFlags([
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${node.criEndpointOnHost}`,
    `--root-dir=${join(dir, 'root')}`,
    `--cgroup-root=${cgroupRootForKubepods(node.cgroupParent)}`,
    ...(await loopbackFlags('containerd-node')),
    '--anonymous-auth',
    '--authorization-mode=AlwaysAllow',
  ]);
  expect(flags.errors).toEqual([]);
  kubeletPort = Number(flags.configOverrides.port);
  certFile = join(flags.options.certDir, 'kubelet.crt');
  const loaded = await loadKubeletConfiguration(undefined, {
    ...flags.configOverrides,
    podLogsDir: join(node.sharedDirOnHost, 'logs'),
  });
  agent = run(
    flags.options,
    loaded,
    stderrLogger(0, (s) => logs.push(s)),
    abort.signal,
    {
      runtimeManager: {
        podsDir: containerd.podsDir,
        pathMapping: { agentRoot: node.sharedDirOnHost, runtimeRoot: node.sharedDirInNode },
        podSandboxImage: refs.pause,
      },
    },
  );
  expect(await waitForNodeReady(kubeconfig, 'containerd-node')).toContain('condition met');
}, 300_000);

afterAll(async () => {
  abort.abort();
  await agent?.catch(() => {});
  await apiserver?.stop();
  await containerd?.stop();
}, 120_000);

it('reports containerd in nodeInfo', async () => {
  const n = await api.getNode('containerd-node');
  // The version containerd itself reports, whichever Debian release the default node image has.
  const { runtimeVersion } = await containerd!.node.criVersion();
  expect(runtimeVersion).toMatch(/^\d+\.\d+\./);
  expect(n?.status?.nodeInfo?.containerRuntimeVersion).toBe(`containerd://${runtimeVersion}`);
});

it("finds containerd's sandbox image in its verbose CRI Status, for image GC to keep", async () => {
  const image = await runtimeSandboxImage(containerd!.cri, silentLogger);
  expect(image).toBe(`docker.io/${containerd!.refs.pause}`);
});

it('runs a kubectl-created pod on containerd and deletes it gracefully', async () => {
  const file = join(dir, 'pod.json');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        nodeName: 'containerd-node',
        terminationGracePeriodSeconds: 5,
        containers: [
          { name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
        ],
      },
    }),
  );
  await kubectl(kubeconfig, 'apply', '-f', file);
  let pod = await api.getPod('default', 'web');
  for (let i = 0; i < 300 && !pod?.status?.containerStatuses?.[0]?.ready; i++) {
    await new Promise((r) => setTimeout(r, 100));
    pod = await api.getPod('default', 'web');
  }
  if (!pod?.status?.containerStatuses?.[0]?.ready)
    throw new Error(`pod not ready: ${JSON.stringify(pod?.status)}\n${logs.join('').slice(-3000)}`);
  expect(pod.status.phase).toBe('Running');
  expect(pod.status.podIP).toMatch(/^10\.88\./);
  expect(pod.status.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
  expect(pod.status.containerStatuses?.[0]?.imageID).toBeTruthy();
  expect(pod.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

  // /stats/summary over TLS (anonymous allowed in this test), with containerd's numbers.
  const summary = JSON.parse(await httpsGet(kubeletPort, '/stats/summary', readFileSync(certFile, 'utf8')));
  expect(summary.node.nodeName).toBe('containerd-node');
  expect(summary.node.memory.workingSetBytes).toBeGreaterThan(0);
  expect(summary.node.fs.capacityBytes).toBeGreaterThan(0);
  const web = summary.pods.find((p: { podRef: { name: string } }) => p.podRef.name === 'web');
  expect(web?.containers?.[0]?.name).toBe('main');
  expect(web?.memory?.workingSetBytes).toBeGreaterThan(0);

  await kubectl(kubeconfig, 'delete', 'pod', 'web', '--timeout=60s');
  expect(await api.getPod('default', 'web')).toBeUndefined();
  const { containers } = await containerd!.cri.listContainers({});
  expect(containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING)).toEqual([]);
}, 120_000);
