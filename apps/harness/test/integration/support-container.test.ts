// SupportContainer against the host Docker engine: labels, the run network only, a loopback-only
// port, shared files, and that stop() and a failed start leave nothing behind.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { ensureImages, runId, type StartedTestNetwork, TestNetwork } from '@kh/testkit';
import Docker from 'dockerode';
import { Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SupportContainer } from '../../src/node/support-container.js';

const docker = new Docker();
let image: string;
let network: StartedTestNetwork;

beforeAll(async () => {
  image = (await ensureImages(['node'])).node;
  network = await new TestNetwork().start();
}, 120_000);

afterAll(async () => {
  await network?.stop();
});

const uniqueName = () => `kh-${runId}-support-${randomBytes(3).toString('hex')}`;
/** Shared directories of the role the failure tests use, which nothing else creates. */
const failedRoleDirs = async () => (await readdir(tmpdir())).filter((d) => d.startsWith('kh-support-test-'));

/** The error of a start that must fail (one that succeeds is stopped and fails the test). */
const startError = (container: SupportContainer) =>
  container.start().then(
    async (started) => {
      await started.stop();
      throw new Error('the container started');
    },
    (err: unknown) => err as Error,
  );

const exists = (name: string) =>
  docker
    .getContainer(name)
    .inspect()
    .then(
      () => true,
      () => false,
    );

describe('SupportContainer', { timeout: 60_000 }, () => {
  it('starts labelled, on the run network only, with a loopback port and the shared files; stop removes it', async () => {
    const name = uniqueName();
    const container = await new SupportContainer(image, name, 'apiserver')
      .withRunNetwork(network, 'alias-a')
      .withLoopbackPort(6443)
      .withSharedFile('token', 'secret')
      .withCommand(['sh', '-c', 'cat /run/kh/token; echo; exec sleep infinity'])
      .withWaitStrategy(Wait.forLogMessage('secret'))
      .start();
    try {
      const info = await docker.getContainer(name).inspect();
      expect(info.Config.Labels).toMatchObject({
        'kh.run': runId,
        'kh.owner': 'test',
        'kh.role': 'apiserver',
      });
      expect(Object.keys(info.NetworkSettings.Networks)).toEqual([network.name]);
      expect(info.NetworkSettings.Networks[network.name]?.Aliases).toContain('alias-a');
      expect(container.getIpAddress(network.name)).toBe(
        info.NetworkSettings.Networks[network.name]?.IPAddress,
      );
      expect(info.NetworkSettings.Ports['6443/tcp']).toEqual([
        { HostIp: '127.0.0.1', HostPort: String(container.getMappedPort(6443)) },
      ]);
      const { output } = await container.exec(['sh', '-c', 'stat -c %a /run/kh/token']);
      expect(output.trim()).toBe('600');
      expect(existsSync(container.sharedDirOnHost)).toBe(true);
    } finally {
      await container.stop();
    }
    expect(await exists(name)).toBe(false);
    expect(existsSync(container.sharedDirOnHost)).toBe(false);
    await container.stop(); // a second stop is harmless
  });

  it('a start that fails its wait strategy removes everything and quotes the output', async () => {
    const name = uniqueName();
    const err = await startError(
      new SupportContainer(image, name, 'support-test')
        .withCommand(['sh', '-c', 'echo "cannot listen: port in use" >&2; exit 3'])
        .withWaitStrategy(Wait.forLogMessage('listening')),
    );
    expect(err.message).toMatch(new RegExp(`^${name} did not start: .*listening`));
    expect(err.message).toContain('\ncannot listen: port in use');
    expect(await exists(name)).toBe(false);
    expect(await failedRoleDirs()).toEqual([]);
  });

  it('a container created but refused at start is removed too', async () => {
    const name = uniqueName();
    const err = await startError(
      new SupportContainer(image, name, 'support-test').withEntrypoint(['/no/such/binary']),
    );
    expect(err.message).toMatch(new RegExp(`^${name} did not start: .*no/such/binary`));
    expect(await exists(name)).toBe(false);
    expect(await failedRoleDirs()).toEqual([]);
  });
});
