import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  DOCKERSHIM_CNI_FLAGS,
  done,
  ensureImages,
  NodeContainer,
  notYet,
  POD_SUBNET,
  RegistryContainer,
  type StartedNodeContainer,
  type StartedRegistryContainer,
  type StartedTestNetwork,
  TestNetwork,
  until,
} from '@kh/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance, type SuiteResult } from '../src/index.js';
import { EVERY_CASE, expectCase, NODE_CONTAINER_SKIPS } from './expectations.js';
import { nodeSuiteOptions, REGISTRY_IMAGE } from './node_options.js';
import { pushUniqueImage } from './unique_image.js';

// The topology of an end-to-end run: dockerd in a kind-style node container, the dockershim running
// next to it inside the node (host Node.js and the built repo bind-mounted) with pods on CNI from
// the node's pod CIDR, CRI socket shared with the host, pulls from a registry with basic auth on
// the node's network.

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
        `--restrict-oom-score-adj ${DOCKERSHIM_CNI_FLAGS.join(' ')} > ${node.sharedDirInNode}/dockershim.log 2>&1`,
    ],
  });
  await exec.start({ Detach: true });
  const socket = node.criEndpointOnHost.replace('unix://', '');
  await until(
    async () => (existsSync(socket) ? done(socket) : notYet(`see ${node.sharedDirOnHost}/dockershim.log`)),
    {
      timeoutMs: 10_000,
      intervalMs: 100,
      describe: 'the dockershim in the node to listen',
    },
  );
  // As a kubelet passes on its Node's pod CIDR: the shim writes the node's CNI config from it.
  await node.updatePodCidr(POD_SUBNET);
  await pushUniqueImage(docker, refs.busybox, runId, registry, REGISTRY_IMAGE);
  result = await runConformance(nodeSuiteOptions({ node, network, registry, refs, runId }), { progress });
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
