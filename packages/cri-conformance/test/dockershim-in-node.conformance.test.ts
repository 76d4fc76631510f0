import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ensureImages,
  NodeContainer,
  RegistryContainer,
  type StartedNodeContainer,
  type StartedRegistryContainer,
  type StartedTestNetwork,
  TestNetwork,
} from '@kh/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance, type SuiteResult } from '../src/index.js';
import { EVERY_CASE, expectCase, NODE_CONTAINER_SKIPS, NODE_STREAMING_UNREACHABLE } from './expectations.js';
import { pushUniqueImage } from './unique_image.js';

// The topology of an end-to-end run: dockerd in a kind-style node container, the dockershim running
// next to it inside the node (host Node.js and the built repo bind-mounted), CRI socket shared with
// the host, pulls from a registry with basic auth on the node's network.

const docker = new Dockerode({ socketPath: '/var/run/docker.sock' });
const runId = `conformance-node-${randomBytes(4).toString('hex')}`;
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const REPO_IN_NODE = '/opt/kh';
const progress = (line: string) => process.stderr.write(`${line}\n`);

let network: StartedTestNetwork;
let node: StartedNodeContainer;
let registry: StartedRegistryContainer;
let result: SuiteResult;

beforeAll(async () => {
  const refs = await ensureImages(['pause', 'busybox', 'httpd', 'node'], { progress });
  network = await new TestNetwork().start();
  registry = await new RegistryContainer(refs.node)
    .withNetwork(network)
    .withBasicAuth('kh', `pw-${runId}`)
    .start();
  node = await new NodeContainer(refs.node)
    .withRuntime('docker')
    .withNetwork(network)
    .withHostNode()
    .withBindMounts([{ source: REPO, target: REPO_IN_NODE, mode: 'ro' }])
    .withImages(refs.pause, refs.busybox, refs.httpd)
    .withProgress(progress)
    .start();
  const exec = await docker.getContainer(node.id).exec({
    Cmd: [
      'sh',
      '-c',
      `exec /usr/local/bin/node ${REPO_IN_NODE}/packages/dockershim/dist/cli.js --listen ${node.criEndpointInNode} ` +
        `--docker-endpoint ${node.runtimeEndpointInNode} --pod-infra-container-image ${refs.pause} ` +
        `--restrict-oom-score-adj > ${node.sharedDirInNode}/dockershim.log 2>&1`,
    ],
  });
  await exec.start({ Detach: true });
  const socket = node.criEndpointOnHost.replace('unix://', '');
  for (let i = 0; !existsSync(socket); i++) {
    if (i > 100)
      throw new Error(`the dockershim in the node did not start: see ${node.sharedDirOnHost}/dockershim.log`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await pushUniqueImage(docker, refs.busybox, runId, registry, 'kh/busybox:conformance');
  result = await runConformance(
    {
      endpoint: node.criEndpointOnHost,
      images: { busybox: refs.busybox, httpd: refs.httpd },
      registry: {
        address: registry.networkAddress,
        image: 'kh/busybox:conformance',
        auth: { username: 'kh', password: `pw-${runId}` },
      },
      logDir: { runtime: join(node.sharedDirInNode, 'logs'), local: join(node.sharedDirOnHost, 'logs') },
      hostPortAddress: node.ipAddress(network),
      hostPortIp: '',
      cgroupParent: node.cgroupParent,
      runId,
      callTimeoutMs: 60_000,
      streamingUnreachable: NODE_STREAMING_UNREACHABLE,
    },
    { progress },
  );
}, 900_000);

afterAll(async () => {
  await node?.stop();
  await registry?.stop();
  await network?.stop();
});

describe('conformance of the dockershim next to dockerd in a node container', () => {
  it('is the dockershim', () => {
    expect(result.runtime.name).toBe('docker');
  });

  // The node's bounding set is what Docker 20.10 granted it (no CAP_PERFMON, BPF, CHECKPOINT_RESTORE),
  // so the privileged cases pass here.
  it.each(EVERY_CASE)('%s', (_, name) => {
    expectCase(result, name, { skips: NODE_CONTAINER_SKIPS });
  });
});
