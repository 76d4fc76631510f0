import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runId } from '../src/containers/labels.js';
import { removeLeftovers } from '../src/containers/leftovers.js';
import { type StartedTestNetwork, TestNetwork } from '../src/containers/network.js';
import { NodeContainer, type StartedNodeContainer } from '../src/containers/node-container.js';
import {
  isTransportError,
  RegistryContainer,
  type StartedRegistryContainer,
} from '../src/containers/registry-container.js';
import { ensureImages, type ImageRefs } from '../src/images/ensure.js';

let refs: ImageRefs<'node' | 'pause' | 'busybox'>;
let network: StartedTestNetwork;
let node: StartedNodeContainer;
const registries: StartedRegistryContainer[] = [];

beforeAll(async () => {
  refs = await ensureImages(['node', 'pause', 'busybox']);
  network = await new TestNetwork().start();
  node = await new NodeContainer(refs.node).withNetwork(network).start();
});

afterAll(async () => {
  for (const r of registries) await r.stop();
  await node?.stop();
  await network?.stop();
  await removeLeftovers({ runId });
});

/** A pull through containerd's registry host configuration, the same one its CRI uses. */
function ctrPull(ref: string, creds?: { username: string; password: string }) {
  const user = creds ? ['--user', `${creds.username}:${creds.password}`] : [];
  return node.exec([
    'ctr',
    '-n',
    'k8s.io',
    'images',
    'pull',
    '--hosts-dir',
    '/etc/containerd/certs.d',
    ...user,
    ref,
  ]);
}

// The open registry takes the alias "registry", the one with auth "private-registry" (both trusted
// for plain http by nodes), as in a harness run.
describe('registry without auth', () => {
  let registry: StartedRegistryContainer;
  beforeAll(async () => {
    registry = await new RegistryContainer(refs.node).withNetwork(network).start();
    registries.push(registry);
  });
  afterAll(() => registry?.stop());

  test('listens on loopback only, as registry:5000 on the test network', () => {
    expect(registry.hostAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(registry.networkAddress).toBe('registry:5000');
    expect(registry.authConfig).toBeUndefined();
  });

  test('push from the host engine, then containerd in a node pulls it over plain http', async () => {
    const ref = await registry.push(refs.busybox, 'kh/busybox:open');
    expect(ref).toBe('registry:5000/kh/busybox:open');
    const pull = await ctrPull(ref);
    expect(pull.exitCode, pull.stderr).toBe(0);
    expect(await node.execOk(['ctr', '-n', 'k8s.io', 'images', 'ls', '-q'])).toContain(ref);
  });

  test('a missing tag fails the pull with not found', async () => {
    const pull = await ctrPull('registry:5000/kh/busybox:missing');
    expect(pull.exitCode).not.toBe(0);
    expect(pull.stderr).toMatch(/not found/);
  });
});

describe('registry with basic auth, as private-registry', () => {
  let registry: StartedRegistryContainer;
  beforeAll(async () => {
    registry = await new RegistryContainer(refs.node)
      .withNetwork(network)
      .withNetworkAlias('private-registry')
      .withBasicAuth('kh', 'pa55word')
      .start();
    registries.push(registry);
  });
  afterAll(() => registry?.stop());

  test('answers 401 without or with wrong credentials, 200 with the right ones', async () => {
    expect(await registry.ping(null)).toBe(401);
    expect(await registry.ping({ username: 'kh', password: 'wrong' })).toBe(401);
    expect(await registry.ping()).toBe(200);
    expect(registry.authConfig).toEqual({
      username: 'kh',
      password: 'pa55word',
      serverAddress: 'http://private-registry:5000',
    });
  });

  test('push uses the credentials; containerd pulls only with them', async () => {
    const ref = await registry.push(refs.busybox, 'kh/busybox:private');
    expect(ref).toBe('private-registry:5000/kh/busybox:private');
    const anonymous = await ctrPull(ref);
    expect(anonymous.exitCode).not.toBe(0);
    expect(anonymous.stderr).toMatch(/401|unauthorized|authorization failed/i);
    const authed = await ctrPull(ref, registry.credentials);
    expect(authed.exitCode, authed.stderr).toBe(0);
  });
});

describe('push failures', () => {
  test('a lost connection counts as a transport error; a refusal does not', () => {
    const reset =
      'pinging container registry 127.0.0.1:32768: Get "http://127.0.0.1:32768/v2/": read tcp 127.0.0.1:46548->127.0.0.1:32768: read: connection reset by peer';
    expect(isTransportError(new Error(reset))).toBe(true);
    expect(isTransportError(new Error('dial tcp 127.0.0.1:9: connect: connection refused'))).toBe(true);
    expect(isTransportError(new Error('unauthorized: authentication required'))).toBe(false);
    expect(isTransportError(new Error('reference does not exist'))).toBe(false);
  });

  test('a push to a registry that is gone is tried three times, then fails with the error', async () => {
    const registry = await new RegistryContainer(refs.node).start();
    registries.push(registry);
    await registry.stop();
    const started = performance.now();
    await expect(registry.push(refs.busybox, 'kh/busybox:gone')).rejects.toThrow(/connection refused/);
    // The waits between the three attempts are 1 s and 2 s.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3000);
  });
});
