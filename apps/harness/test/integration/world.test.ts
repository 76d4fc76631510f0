// Against the host Docker engine: the world comes up, a fake-runtime node registers Ready through
// the real agent, and stopping leaves nothing with this run's label, also when a node fails.
import { randomBytes } from 'node:crypto';
import { removeLeftovers, runId } from '@kh/testkit';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeBackend } from '../../src/backends/fake.js';
import type { RuntimeBackend } from '../../src/backends/types.js';
import { AGENT_HEALTHZ_PORT } from '../../src/node/agent-config.js';
import { startNode } from '../../src/run/node.js';
import { HarnessWorld, nodeNameFor } from '../../src/world/world.js';
import { silentProgress } from '../run/fakes.js';

const docker = new Docker();
const labelled = async () => {
  const label = [`kh.run=${runId}`];
  const [containers, networks] = await Promise.all([
    docker.listContainers({ all: true, filters: { label } }),
    docker.listNetworks({ filters: { label } }),
  ]);
  return { containers: containers.length, networks: networks.length };
};

afterAll(async () => {
  await removeLeftovers({ runId });
}, 60_000);

describe('HarnessWorld with the fake backend', () => {
  it('registers a Ready node, and stop removes every container and network of the run', async () => {
    const id = `t${randomBytes(3).toString('hex')}`;
    const world = await HarnessWorld.start({
      runId: id,
      nodes: [nodeNameFor(id, 'fake')],
      progress: silentProgress,
    });
    try {
      expect(world.images.busybox).toMatch(/^registry:5000\/kh\/busybox:/);
      expect(world.images.private).toMatch(/^private-registry:5000\/kh\/private:/);
      const node = await startNode(world, fakeBackend, silentProgress);
      try {
        const n = await world.core.readNode({ name: node.started.nodeName });
        expect(n.status?.nodeInfo?.containerRuntimeVersion).toBe('fake-cri://0.1.0');
        expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
        expect(node.agentLogs(50).length).toBeGreaterThan(0);
        // A restart keeps the objects (data dir), the address and the CA the clients trust.
        await world.restartApiserver();
        expect((await world.core.readNode({ name: node.started.nodeName })).metadata?.uid).toBe(
          n.metadata?.uid,
        );
        // A reconfigured agent counts as started once it serves and has posted its own status, not
        // when its process is spawned: the next cell must not see its start-up.
        const before = Date.now();
        await node.reconfigureAgent({ nodeStatusReportFrequency: '2m' });
        const ready = (await world.core.readNode({ name: node.started.nodeName })).status?.conditions?.find(
          (c) => c.type === 'Ready',
        );
        expect(ready?.status).toBe('True');
        expect(new Date(ready?.lastHeartbeatTime ?? 0).getTime()).toBeGreaterThanOrEqual(
          Math.ceil(before / 1000) * 1000,
        );
        const healthz = await node.started.host.exec(['ss', '-Hltn', `sport = :${AGENT_HEALTHZ_PORT}`]);
        expect(healthz.output.trim()).not.toBe('');
      } finally {
        await node.stop();
      }
    } finally {
      await world.stop();
    }
    expect(await labelled()).toEqual({ containers: 0, networks: 0 });
  }, 120_000);

  it('a node whose agent cannot become Ready is removed and the error names the agent log', async () => {
    const id = `t${randomBytes(3).toString('hex')}`;
    const world = await HarnessWorld.start({
      runId: id,
      nodes: [nodeNameFor(id, 'broken')],
      progress: silentProgress,
    });
    // The fake node, but the agent is pointed at a socket nobody serves.
    const broken: RuntimeBackend = {
      ...fakeBackend,
      name: 'broken',
      async start(ctx) {
        const started = await fakeBackend.start(ctx);
        return { ...started, nodeCriEndpoint: 'unix:///run/kh/nobody.sock' };
      },
    };
    try {
      await expect(startNode(world, broken, silentProgress)).rejects.toThrow(/node-agent log:/);
      expect((await labelled()).containers).toBe(3); // apiserver and the two registries only
    } finally {
      await world.stop();
    }
    expect(await labelled()).toEqual({ containers: 0, networks: 0 });
  }, 120_000);
});
