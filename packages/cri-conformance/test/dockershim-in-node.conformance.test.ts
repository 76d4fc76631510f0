import { randomBytes } from 'node:crypto';
import {
  DOCKERSHIM_CNI_FLAGS,
  ensureImages,
  NodeContainer,
  POD_SUBNET,
  PRIVATE_REGISTRY_HOST,
  RegistryContainer,
  type StartedNodeContainer,
  type StartedRegistryContainer,
  type StartedTestNetwork,
  TestNetwork,
} from '@kh/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALL_CASES,
  type NodeSuiteRun,
  runConformanceInNode,
  startDockershim,
  withCheckout,
} from '../src/index.js';
import { EVERY_CASE, expectCase } from './expectations.js';
import { nodeSuiteOptions, REGISTRY_IMAGE } from './node_options.js';
import { pushUniqueImage } from './unique_image.js';

// The dockershim as a node runs it: dockerd in a kind-style node container of the default release,
// the dockershim next to it (host Node.js and the built checkout mounted), pods on CNI from the
// node's pod CIDR. The `cri-conformance` command runs in the node too, so streaming (served on the
// node's loopback) and mount propagation (shared mounts in dockerd's namespace) run for real. Pulls
// come from two registries on the node's network, one with basic auth and one without. The host's
// engine only runs the node and the registries: a bug in the host's Docker cannot redden this.

const docker = new Dockerode({ socketPath: '/var/run/docker.sock' });
const runId = `conformance-node-${randomBytes(4).toString('hex')}`;
const progress = (line: string) => process.stderr.write(`${line}\n`);

let network: StartedTestNetwork;
let node: StartedNodeContainer;
let authRegistry: StartedRegistryContainer;
let openRegistry: StartedRegistryContainer;
let refs: { pause: string; busybox: string; httpd: string; node: string };
let full: NodeSuiteRun;
let noAuth: NodeSuiteRun;

beforeAll(async () => {
  refs = await ensureImages(['pause', 'busybox', 'httpd', 'node'], { progress });
  network = await new TestNetwork().start();
  [authRegistry, openRegistry] = await Promise.all([
    new RegistryContainer(refs.node)
      .withNetwork(network)
      .withNetworkAlias(PRIVATE_REGISTRY_HOST.split(':')[0] ?? '')
      .withBasicAuth('kh', `pw-${runId}`)
      .start(),
    new RegistryContainer(refs.node).withNetwork(network).start(),
  ]);
  node = await withCheckout(new NodeContainer(refs.node))
    .withRuntime('docker')
    .withNetwork(network)
    .withImages(refs.pause, refs.busybox, refs.httpd)
    .withProgress(progress)
    .start();
  await startDockershim(node, { pauseImage: refs.pause, shimArgs: DOCKERSHIM_CNI_FLAGS });
  // As a kubelet passes on its Node's pod CIDR: the shim writes the node's CNI config from it.
  await node.updatePodCidr(POD_SUBNET);
  for (const registry of [authRegistry, openRegistry])
    await pushUniqueImage(docker, refs.busybox, runId, registry, REGISTRY_IMAGE);
  const options = { node, network, refs };
  full = await runConformanceInNode(node, nodeSuiteOptions({ ...options, registry: authRegistry }));
  progress(full.stderr);
  noAuth = await runConformanceInNode(node, {
    ...nodeSuiteOptions({ ...options, registry: openRegistry }),
    focus: /^image /,
  });
}, 900_000);

afterAll(async () => {
  await node?.stop();
  await Promise.all([authRegistry?.stop(), openRegistry?.stop()]);
  await network?.stop();
});

describe('conformance of the dockershim next to dockerd in a node container', () => {
  it('is the dockershim', () => {
    expect(full.result?.runtime.name, full.stderr).toBe('docker');
  });

  // The node's bounding set is what the host's engine granted it, and the runtime's host is the
  // node: the privileged cases judge the shim against it.
  it.each(EVERY_CASE)('%s', (_, name) => {
    expectCase(full.result, name, {});
  });
});

describe('image pulls from a registry without auth', () => {
  it('pass, and the credentials case is skipped with its reason', () => {
    const statuses = Object.fromEntries((noAuth.result?.cases ?? []).map((c) => [c.name, c.status]));
    expect(statuses, noAuth.stderr).toMatchObject({
      'PullImage by tag, then status, list and remove': 'passed',
      'PullImage by digest, then remove by digest': 'passed',
      'PullImage of a missing tag is NOT_FOUND': 'passed',
      'PullImage needs the registry credentials when the registry asks for them': 'skipped',
    });
    expect(noAuth.result?.totals.failed).toBe(0);
  });
});

describe('the cri-conformance command (in the node)', () => {
  it('prints the summary, writes JSON and JUnit, exits 0 when nothing failed, and leaves no log dir', () => {
    expect(full.exitCode, full.stderr).toBe(0);
    expect(full.stdout).toContain(`${ALL_CASES.length} passed, 0 failed, 0 skipped`);
    expect(full.leftInTmpdir).toEqual([]);
    expect(full.result?.cases.map((c) => c.name)).toEqual(ALL_CASES.map((c) => c.name));
    const groups = [...new Set(ALL_CASES.map((c) => c.group))];
    for (const group of groups) {
      const n = ALL_CASES.filter((c) => c.group === group).length;
      expect(full.junit).toContain(`<testsuite name="${group}" tests="${n}" failures="0" skipped="0"`);
    }
  });

  it('exits 2 with a clear message when the endpoint is wrong, and leaves no log dir', async () => {
    const run = await runConformanceInNode(node, {
      ...nodeSuiteOptions({ node, network, refs, registry: openRegistry }),
      endpoint: `unix://${node.sharedDirInNode}/nothing.sock`,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain(`cannot talk CRI to unix://${node.sharedDirInNode}/nothing.sock`);
    expect(run.result).toBeUndefined();
    expect(run.leftInTmpdir).toEqual([]);
  });
});
