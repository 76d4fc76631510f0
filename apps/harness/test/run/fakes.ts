// In-memory stand-ins for the world, nodes and backends, so the runner's bookkeeping (cells,
// skips, failures, clean-up) is tested without Docker.
import type { RuntimeBackend, StartedNode, StaticCapability } from '../../src/backends/types.js';
import type { ClosureScenario, Scenario } from '../../src/framework/scenario.js';
import type { Progress } from '../../src/support/progress.js';
import type { ReadyNode, World, WorldContext } from '../../src/world/types.js';

export interface Journal {
  events: string[];
}

export function fakeBackend(name: string, caps: StaticCapability[] = []): RuntimeBackend {
  return {
    name,
    description: `fake ${name}`,
    capabilities: new Set(caps),
    start: () => Promise.reject(new Error('not used: startNode is injected')),
  };
}

export function fakeWorld(journal: Journal, opts: { stopFails?: boolean } = {}): World {
  return {
    runId: 'test',
    async openCell(node, namespace) {
      journal.events.push(`open ${namespace} on ${node.started.nodeName}`);
      return {
        context: {
          nodeName: node.started.nodeName,
          backend: node.started,
          capabilities: node.backend.capabilities,
        } as unknown as WorldContext,
        claim: (ns) => {
          journal.events.push(`claim ${ns}`);
        },
        close: () => {
          journal.events.push(`close ${namespace}`);
        },
      };
    },
    createNamespace: async (n) => {
      journal.events.push(`create ns ${n}`);
    },
    deleteNamespace: async (n) => {
      journal.events.push(`delete ns ${n}`);
    },
    stop: async () => {
      journal.events.push('world stopped');
      if (opts.stopFails) throw new Error('network busy');
    },
  };
}

/** What each read of a fake node's CPU counter adds: a cell (two reads) costs exactly this. */
export const FAKE_NODE_CPU_STEP = 1.5;

export function fakeNode(backend: RuntimeBackend, journal: Journal, index = 0): ReadyNode {
  let cpu = 0;
  const started = {
    host: {
      cpuSeconds: async () => {
        cpu += FAKE_NODE_CPU_STEP;
        return cpu;
      },
    },
    runtimeName: `${backend.name}-rt`,
    runtimeVersion: '1.0',
    hostCriEndpoint: `unix:///tmp/${backend.name}.sock`,
    nodeName: `node-${backend.name}${index > 0 ? `-${index + 1}` : ''}`,
    runtimeLogs: async () => ['runtime line'],
    warnings: [],
  } as unknown as StartedNode;
  return {
    backend,
    started,
    startupMs: 42,
    agentLogs: () => ['agent line'],
    stopAgent: async () => {},
    startAgent: async () => {},
    killAgent: async () => {},
    reconfigureAgent: async () => {},
    agentCriCalls: async () => [],
    gone: async () => undefined,
    stop: async () => {
      journal.events.push(`node ${started.nodeName.slice(5)} stopped`);
    },
  };
}

export const silentProgress: Progress = {
  step: () => {},
  ok: () => {},
  fail: () => {},
  skip: () => {},
  warn: () => {},
  info: () => {},
  child: () => silentProgress,
};

export function scenario(
  name: string,
  run: ClosureScenario['run'],
  extra: Partial<ClosureScenario> = {},
): Scenario {
  return { name, description: name, run, ...extra };
}
