// What the runner needs from a run's world and from a started node; world.ts and run/node.ts build them.
import type { PartialKubeletConfiguration, TestOnlySettings } from '@kh/node-agent';
import type { RuntimeBackend, StartedNode } from '../backends/types.js';
import type { ScenarioContext } from '../framework/scenario.js';
import type { AgentCriCall } from '../node/cri-call-log.js';
import type { ContainerCpu, TimelineEntry } from '../results/model.js';

/** The context pieces of one cell that need the apiserver and the node. */
export type WorldContext = Omit<
  ScenarioContext,
  | 'check'
  | 'note'
  | 'skip'
  | 'recordStartupFloor'
  | 'log'
  | 'sleep'
  | 'runtime'
  | 'namespace'
  | 'createNamespace'
>;

export type TimelineSink = (e: Omit<TimelineEntry, 't'>) => void;

/** A cell's view of the world, open until `close`. */
export interface OpenCell {
  context: WorldContext;
  /** Routes a further namespace's timeline (its pods and events) to the cell as well, until `close`. */
  claim(namespace: string): void;
  close(): void;
}

/** The shared world of a run: network, apiserver, registry. Built by world/world.ts. */
export interface World {
  runId: string;
  /**
   * Opens a cell on `node`. Until it is closed, the API timeline of `namespace` and of the node,
   * and the CRI calls made through the context, go to `sink`. Cells may share a node: the node's
   * entries then reach each of them.
   */
  openCell(node: ReadyNode, namespace: string, sink: TimelineSink): Promise<OpenCell>;
  createNamespace(name: string): Promise<void>;
  deleteNamespace(name: string): Promise<void>;
  /** CPU-seconds of the world's own containers so far (apiserver, registries); absent: none to read. */
  cpuUse?(): Promise<ContainerCpu[]>;
  stop(): Promise<void>;
}

/** A backend whose node runs our agent and is Ready. */
export interface ReadyNode {
  backend: RuntimeBackend;
  started: StartedNode;
  startupMs: number;
  /** Started with a disk of its own (BackendContext.ownDisk), for Scenario.ownDisk cells. */
  ownDisk?: boolean;
  agentLogs(lines: number): string[];
  stopAgent(): Promise<void>;
  startAgent(): Promise<void>;
  /** SIGKILLs the agent (a crash); startAgent runs it again. */
  killAgent(): Promise<void>;
  reconfigureAgent(overrides: PartialKubeletConfiguration, testOnly?: TestOnlySettings): Promise<void>;
  /** The CRI calls the agent logged on the node since the last call (`--cri-call-log`). */
  agentCriCalls(): Promise<AgentCriCall[]>;
  /**
   * Why the node can run no more cells (its container is gone, it runs no command), or undefined
   * while it can. Asked after a failed cell, so that one dead node does not fail every later cell.
   */
  gone(): Promise<string | undefined>;
  stop(): Promise<void>;
}
