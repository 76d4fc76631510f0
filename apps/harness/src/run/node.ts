// Brings one backend's node into the world: the backend starts the runtime, the harness starts our
// agent on the node with its own KubeletConfiguration and kubeconfig, and the node counts as
// ready once the API shows it Ready (the agent's own verdict, as a user would see it).

import { setTimeout as delay } from 'node:timers/promises';
import { cgroupRootForKubepods } from '@kh/node-agent/command';
import { done, notYet, until } from '@kh/testkit';
import type { CoreV1Api } from '@kubernetes/client-node';
import { startedNode } from '../backends/started-node.js';
import type { RuntimeBackend, StartedNode } from '../backends/types.js';
import { agentPath, NodeAgent } from '../node/agent.js';
import { AGENT_HEALTHZ_PORT } from '../node/agent-config.js';
import { AGENT_CRI_CALL_LOG, CriCallLogReader } from '../node/cri-call-log.js';
import type { NodeHost } from '../node/host.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import type { ReadyNode } from '../world/types.js';
import type { HarnessWorld } from '../world/world.js';
import { nodeNameFor } from '../world/world.js';
import type { NodeOptions } from './lanes.js';

const NODE_READY_TIMEOUT_MS = 90_000;
/** How long `true` may take on a live node, however loaded. */
const NODE_PROBE_TIMEOUT_MS = 30_000;

export async function startNode(
  world: HarnessWorld,
  backend: RuntimeBackend,
  progress: Progress,
  /** Which of the runtime's nodes (lanes) this is; the first is 0. */
  index = 0,
  opts: NodeOptions = {},
): Promise<ReadyNode> {
  const t0 = Date.now();
  const nodeName = nodeNameFor(world.runId, backend.name, index);
  progress.step(`starting node ${nodeName}${opts.ownDisk ? ' (a disk of its own)' : ''}`);
  const ctx = {
    runId: world.runId,
    network: world.networkHandle,
    images: world.refs,
    nodeName,
    progress: (m: string) => progress.info(m),
    ...(opts.ownDisk ? { ownDisk: true } : {}),
  };
  const fromBackend = await backend.start(ctx);
  let started: StartedNode;
  try {
    started = await startedNode(backend, fromBackend, ctx);
  } catch (err) {
    await fromBackend.stop().catch(() => {});
    throw err;
  }
  progress.ok(`${started.runtimeName} ${started.runtimeVersion} answers CRI at ${started.hostCriEndpoint}`);
  const placement = started.agent;
  const agent = new NodeAgent(started.host, {
    nodeName,
    criEndpoint: started.nodeCriEndpoint,
    kubeconfig: world.nodeKubeconfig(nodeName, placement?.apiserver ?? 'node'),
    ...(placement
      ? {
          dir: placement.dir,
          command: placement.command,
          ...(placement.config ? { config: placement.config } : {}),
        }
      : {}),
    clientCA: world.apiserverCA,
    nodeIp: started.nodeIp,
    // The agent makes its kubepods tree under the node's own cgroup, where the node's pods go.
    ...(started.cgroupParent ? { cgroupRoot: cgroupRootForKubepods(started.cgroupParent) } : {}),
  });
  try {
    progress.step('starting node-agent');
    await agent.start();
    await waitNodeReady(world.core, nodeName, agent, NODE_READY_TIMEOUT_MS);
  } catch (err) {
    const tail = agent.tail(30).join('\n');
    await agent.stop().catch(() => {});
    await started.stop().catch(() => {});
    throw new Error(`${(err as Error).message}${tail ? `\nnode-agent log:\n${tail}` : ''}`);
  }
  const startupMs = Date.now() - t0;
  progress.ok(`node ${nodeName} Ready after ${(startupMs / 1000).toFixed(1)}s`);
  return readyNode(backend, started, agent, startupMs, opts, (since) =>
    waitAgentStarted(world.core, started.host, nodeName, agent, since),
  );
}

function readyNode(
  backend: RuntimeBackend,
  started: StartedNode,
  agent: NodeAgent,
  startupMs: number,
  opts: NodeOptions,
  waitStarted: (since: number) => Promise<void>,
): ReadyNode {
  const criCallLog = new CriCallLogReader(started.host, agentPath(AGENT_CRI_CALL_LOG, started.agent?.dir));
  // A (re)start returns once the new agent serves, so the next step or cell never measures the
  // agent's start-up: its first status post, its registration events, its healthz not listening.
  const start = (begin: () => Promise<void>) => startOnSecondBoundary(begin, waitStarted);
  return {
    backend,
    started,
    startupMs,
    ...(opts.ownDisk ? { ownDisk: true } : {}),
    agentLogs: (n) => agent.tail(n),
    stopAgent: () => agent.stop(),
    startAgent: () => start(() => agent.start()),
    killAgent: () => agent.kill(),
    reconfigureAgent: async (o, testOnly) => {
      // Stopped first, so that the old agent's last heartbeat is older than the new one's start.
      await agent.stop();
      await start(() => agent.reconfigure(o, testOnly));
    },
    agentCriCalls: () => criCallLog.readNew(),
    gone: async () => {
      try {
        const { exitCode, output } = await started.host.exec(['true'], { timeoutMs: NODE_PROBE_TIMEOUT_MS });
        return exitCode === 0 ? undefined : `\`true\` exited with ${exitCode} on it: ${output.trim()}`;
      } catch (err) {
        return `it runs no command: ${errorMessage(err)}`;
      }
    },
    stop: async () => {
      await agent.stop().catch(() => {});
      await started.stop();
    },
  };
}

/**
 * Starts an agent (`begin`) on the next whole second and waits for it from there. Heartbeats have
 * whole seconds, and a new agent posts one at once, then not again for nodeStatusReportFrequency:
 * started on a boundary, its first post always counts and the stopped agent's last one (made before
 * the boundary) never does.
 */
export async function startOnSecondBoundary(
  begin: () => Promise<void>,
  waitStarted: (since: number) => Promise<void>,
): Promise<void> {
  const since = Math.ceil(Date.now() / 1000) * 1000;
  // A timer may fire a millisecond early against the wall clock: wait until Date.now() says so.
  for (let left = since - Date.now(); left > 0; left = since - Date.now()) await delay(left);
  await begin();
  await waitStarted(since);
}

/**
 * Waits until an agent started at `since` (a whole second, after the old agent stopped) serves: its
 * healthz port listens (it does so only after its start-up writes) and it has posted a Ready
 * heartbeat of its own, at or after `since`. The Node's Ready condition alone can be the stopped
 * agent's last post.
 */
async function waitAgentStarted(
  core: CoreV1Api,
  host: NodeHost,
  nodeName: string,
  agent: { running: boolean },
  since: number,
): Promise<void> {
  await until(
    async () => {
      if (!agent.running) throw new Error(`node-agent on ${nodeName} exited while starting`);
      const ss = await host.exec(['ss', '-Hltn', `sport = :${AGENT_HEALTHZ_PORT}`]);
      return ss.exitCode === 0 && ss.output.trim() !== ''
        ? done(undefined)
        : notYet(`healthz port ${AGENT_HEALTHZ_PORT} not listening`);
    },
    { timeoutMs: NODE_READY_TIMEOUT_MS, intervalMs: 500, describe: `node-agent on ${nodeName} listening` },
  );
  await waitNodeReady(core, nodeName, agent, NODE_READY_TIMEOUT_MS, since);
}

/**
 * Polls the Node's Ready condition, with a heartbeat at or after `heartbeatFrom` (epoch ms) when
 * given; fails early when the agent exits.
 */
export async function waitNodeReady(
  core: CoreV1Api,
  nodeName: string,
  agent: { running: boolean },
  timeoutMs: number,
  heartbeatFrom = 0,
): Promise<void> {
  await until(
    async () => {
      if (!agent.running) throw new Error(`node-agent on ${nodeName} exited before the node was Ready`);
      try {
        const node = await core.readNode({ name: nodeName });
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
        const heartbeat = new Date(ready?.lastHeartbeatTime ?? 0).getTime();
        if (ready?.status === 'True' && heartbeat >= heartbeatFrom) return done(undefined);
        return notYet(
          ready
            ? `Ready=${ready.status} (${ready.reason}: ${ready.message}), heartbeat ${ready.lastHeartbeatTime}`
            : 'no Ready condition',
        );
      } catch {
        return notYet('not registered');
      }
    },
    { timeoutMs, intervalMs: 500, describe: `node ${nodeName} Ready` },
  );
}
