// Brings one backend's node into the world: the backend starts the runtime, the harness starts our
// agent on the node with its own KubeletConfiguration and kubeconfig, and the node counts as
// ready once the API shows it Ready (the agent's own verdict, as a user would see it).

import { done, notYet, until } from '@kh/testkit';
import type { CoreV1Api } from '@kubernetes/client-node';
import { startedNode } from '../backends/started-node.js';
import type { RuntimeBackend, StartedNode } from '../backends/types.js';
import { agentPath, NodeAgent } from '../node/agent.js';
import { AGENT_CRI_CALL_LOG, CriCallLogReader } from '../node/cri-call-log.js';
import type { Progress } from '../support/progress.js';
import type { ReadyNode } from '../world/types.js';
import type { HarnessWorld } from '../world/world.js';
import { nodeNameFor } from '../world/world.js';

const NODE_READY_TIMEOUT_MS = 90_000;

export async function startNode(
  world: HarnessWorld,
  backend: RuntimeBackend,
  progress: Progress,
  /** Which of the runtime's nodes (lanes) this is; the first is 0. */
  index = 0,
): Promise<ReadyNode> {
  const t0 = Date.now();
  const nodeName = nodeNameFor(world.runId, backend.name, index);
  progress.step(`starting node ${nodeName}`);
  const ctx = {
    runId: world.runId,
    network: world.networkHandle,
    images: world.refs,
    nodeName,
    progress: (m: string) => progress.info(m),
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
    ...(started.cgroupParent ? { cgroupRoot: started.cgroupParent } : {}),
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
  return readyNode(backend, started, agent, startupMs);
}

function readyNode(
  backend: RuntimeBackend,
  started: StartedNode,
  agent: NodeAgent,
  startupMs: number,
): ReadyNode {
  const criCallLog = new CriCallLogReader(started.host, agentPath(AGENT_CRI_CALL_LOG, started.agent?.dir));
  return {
    backend,
    started,
    startupMs,
    agentLogs: (n) => agent.tail(n),
    stopAgent: () => agent.stop(),
    startAgent: () => agent.start(),
    killAgent: () => agent.kill(),
    reconfigureAgent: (o) => agent.reconfigure(o),
    agentCriCalls: () => criCallLog.readNew(),
    stop: async () => {
      await agent.stop().catch(() => {});
      await started.stop();
    },
  };
}

/** Polls the Node's Ready condition; fails early when the agent exits. */
export async function waitNodeReady(
  core: CoreV1Api,
  nodeName: string,
  agent: { running: boolean },
  timeoutMs: number,
): Promise<void> {
  await until(
    async () => {
      if (!agent.running) throw new Error(`node-agent on ${nodeName} exited before the node was Ready`);
      try {
        const node = await core.readNode({ name: nodeName });
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.status === 'True') return done(undefined);
        return notYet(
          ready ? `Ready=${ready.status} (${ready.reason}: ${ready.message})` : 'no Ready condition',
        );
      } catch {
        return notYet('not registered');
      }
    },
    { timeoutMs, intervalMs: 500, describe: `node ${nodeName} Ready` },
  );
}
