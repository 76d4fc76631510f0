// What a scenario is and what it sees. Scenarios live in e2e/ and only talk to the world the way a
// user would: through the API (client-node and kubectl) and, for counting containers, through CRI.

import type { PartialKubeletConfiguration, TestOnlySettings } from '@kh/node-agent';
import type { WorkloadImageName } from '@kh/testkit';
import type { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { BackendCapability, StartedNode } from '../backends/types.js';
import type { AssertionResult, StartupFloor, TimelineEntry } from '../results/model.js';
import type { KubectlOptions, KubectlProcess, KubectlResult } from '../support/kubectl.js';

interface ScenarioBase {
  /** Kebab-case name used on the command line and in the matrix (node-registration, probes, ...). */
  name: string;
  description: string;
  /** Backend capabilities the scenario needs; missing ones skip the cell with a reason. */
  needs?: BackendCapability[];
  /**
   * Host resources the cell holds alone, such as 'host-pids' (pid.available counts every task on
   * the machine): cells of scenarios naming the same resource on other runtimes wait their turn.
   */
  exclusive?: readonly string[];
  /**
   * Host resources the cell uses beside other such cells but never beside one that holds them
   * alone (`exclusive`), within one run: a readers-writer hold. The probe suites name 'host-pids':
   * their bursts of pods add about a thousand tasks, which moves pid-eviction's threshold, and
   * pid-eviction's thousands of tasks slow every exec on the host past upstream's 1-5 s probe
   * timeouts with failureThreshold 1.
   */
  shared?: readonly string[];
  /**
   * The cell's node has a disk of its own: its agent's root dir (nodefs) and its runtime's root
   * (imagefs, the containers' writable layers) on one size-bounded filesystem that nothing else
   * writes to (the backend's BackendContext.ownDisk). A disk-pressure cell then needs no host-disk
   * lock: no other cell's writes move its thresholds. Such cells run on nodes started for them,
   * one cell at a time (isolation 'node').
   */
  ownDisk?: boolean;
  /**
   * What the cell may share (default 'node'):
   * - 'namespace': it touches only its own namespace's pods, so cells of other such scenarios
   *   run beside it on the same node;
   * - 'node': it changes the node itself (stops or reconfigures the agent or the runtime, fills
   *   its memory or disk, garbage-collects it), so it has a node to itself;
   * - 'world': it changes what every node depends on (restarts the apiserver), so nothing else
   *   runs while it does.
   * Out-of-tree scenarios that say nothing keep a node to themselves, as before.
   */
  isolation?: Isolation;
  /**
   * 'heavy': the cell keeps the host's CPUs busy for much of its length (dozens of pods probed
   * every second or two, all started at once, or writing logs as fast as they can). At most half of the run's parallel cells are heavy at once, and their
   * starts are spaced (the runner's HEAVY_START_SPACING_MS), so that upstream's 1 s probe
   * timeouts still hold beside them on a small host.
   */
  load?: 'heavy';
  /** Upper bound for the whole cell; the runner fails the cell when it is exceeded. */
  timeoutMs?: number;
  /**
   * How long a cell usually takes on real runtimes (measured, 2 cores, parallel cells), for cells
   * no earlier results file has timed: it orders the cells of a run and balances shards. Absent:
   * a minute, until the first run times it.
   */
  estimateMs?: number;
  /**
   * The upstream Kubernetes e2e cases this scenario mirrors end to end (file relative to the
   * kubernetes/kubernetes repository, case as its full test name); docs/node-e2e-coverage.md is
   * generated from these.
   */
  upstream?: readonly UpstreamCase[];
}

/** A scenario that is one closure: the cell has one result. */
export interface ClosureScenario extends ScenarioBase {
  run(ctx: ScenarioContext): Promise<void>;
  cases?: undefined;
}

/**
 * A scenario that declares its cases, as a Ginkgo container declares its specs: `setup` runs once
 * (the shared BeforeEach), then the selected cases side by side, each with its own result, then
 * `teardown`. The cell passes only when every case that ran passed.
 */
export interface CasesScenario<S = unknown> extends ScenarioBase {
  /** What every case shares (pods, config maps); a failure fails every selected case. */
  setup?(ctx: ScenarioContext): Promise<S>;
  cases: readonly ScenarioCase<S>[];
  /** Runs after the cases once `setup` succeeded, whatever they did; a failure fails the cell, not the cases. */
  teardown?(ctx: ScenarioContext, shared: S): Promise<void>;
  run?: undefined;
}

export type Scenario = ClosureScenario | CasesScenario;

/**
 * One case of a scenario. `name` is the upstream case it mirrors as Ginkgo names it (describe,
 * contexts and It, labels left out), the same text scripts/node-e2e-upstream-cases.json lists;
 * `tags` are upstream's labels (NodeConformance, Conformance, Serial, Slow, NodeFeature:…), shown
 * in brackets after the name, as Ginkgo's full text shows them.
 */
export interface ScenarioCase<S = unknown> {
  name: string;
  /** The kubernetes/kubernetes file whose case this is; absent for a case of our own. */
  file?: string;
  tags?: readonly string[];
  /** The case's context has its own `check` and `skip`: its assertions and outcome are its own. */
  run(ctx: ScenarioContext, shared: S): Promise<void>;
}

export type Isolation = 'namespace' | 'node' | 'world';

export interface UpstreamCase {
  file: string;
  case: string;
}

/** Everything a scenario can reach. One context per cell (scenario × runtime). */
export interface ScenarioContext {
  runtime: string;
  nodeName: string;
  /** A namespace created for this cell and deleted after it. */
  namespace: string;
  /**
   * Creates a further namespace of this cell, `<namespace>-<suffix>`, and returns its name: for a
   * scenario that runs upstream cases in turn, as Ginkgo gives each It a namespace of its own. Its
   * pods and events reach the cell's timeline; the cell's end deletes it with the cell's own.
   */
  createNamespace(suffix: string): Promise<string>;
  backend: StartedNode;
  /**
   * What the backend supports. A check the scenario cannot make without a capability belongs in
   * `needs` (the cell then skips with the reason), never in a branch that passes without it.
   */
  capabilities: ReadonlySet<BackendCapability>;
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  /** The node's runtime through CRI, from the host: what really exists, whatever the agent thinks. */
  cri: CriView;
  /**
   * Runs the installed kubectl (default 1.33; `version: '1.27'` picks another) against the run's
   * apiserver as its admin; `tty` runs it on a pseudo-terminal.
   */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Starts kubectl and leaves it running (port-forward, logs -f, attach) until stopped. */
  kubectlStart(args: string[], opts?: KubectlOptions): KubectlProcess;
  /** A bearer token the apiserver knows whose user (`kh-unprivileged`) has no role at all. */
  unprivilegedToken: string;
  /**
   * The run's registries as nodes see them: the open one (registry:5000, plain HTTP, no auth) and
   * one that refuses anonymous pulls (private-registry:5000, basic auth with these credentials).
   */
  registry: { host: string; private: { host: string; username: string; password: string } };
  /**
   * Node agent control, for scenarios that stop, kill (SIGKILL, a crash) and restart it. start()
   * (and reconfigureAgent) return once the new agent serves: healthz listens and it has posted a
   * Ready heartbeat of its own.
   */
  agent: { stop(): Promise<void>; start(): Promise<void>; kill(): Promise<void> };
  /**
   * The run's apiserver: restart() kills it and starts it again on its data dir (as etcd keeps the
   * cluster's state); it answers again at the same address with the same CA when the call returns.
   */
  apiserver: { restart(): Promise<void> };
  /**
   * Workload images as pods name them: pushed to the run's registry (registry:5000/kh/<name>:<hash>);
   * `private` is busybox in the private registry (private-registry:5000/kh/private:<hash>).
   */
  images: Record<WorkloadImageName | 'private', string>;
  /**
   * Rewrites the agent's KubeletConfiguration (merged over the run's) and restarts the agent;
   * `testOnly` shortens periods the kubelet hard-codes (hidden agent flags). Both hold until the
   * next call; `({})` restores the run's agent.
   */
  reconfigureAgent(overrides: PartialKubeletConfiguration, testOnly?: TestOnlySettings): Promise<void>;

  check: Checks;
  note(summary: string, detail?: Record<string, unknown>): void;
  /**
   * Ends the cell as skipped with `reason` (never passed): for what only the running node can
   * say it lacks, such as the runtime announcing no user namespace support in the Node's status,
   * as upstream's e2eskipper.Skipf does. Anything a backend knows before it starts is a `needs`.
   */
  skip(reason: string): never;
  /** The runtime's bare start-up floor, which the `startup` scenario measures (results: `cells[].startupFloor`). */
  recordStartupFloor(floor: StartupFloor): void;
  log(message: string): void;
  sleep(ms: number): Promise<void>;
}

/** Recorded assertions. A failed `expect*` ends the scenario; `soft*` records and continues. */
export interface Checks {
  equal<T>(name: string, actual: T, expected: T): void;
  ok(name: string, condition: boolean, actual?: unknown, expected?: unknown): void;
  /** Polls `probe` until it returns a value that `accept` likes; records the last value on timeout. */
  eventually<T>(
    name: string,
    probe: () => Promise<T>,
    accept: (value: T) => boolean,
    opts?: {
      timeoutMs?: number;
      intervalMs?: number;
      expected?: unknown;
      /**
       * What of the last value to record on failure (default: all of it). With it, a failure also
       * records the distinct descriptions seen on the way (AssertionResult.seen).
       */
      describe?: (value: T) => unknown;
      /**
       * Why a value that `accept` refused shows the wait can never succeed (a terminal phase, a
       * restart count past the one expected), or undefined: the check fails at once with it,
       * as upstream's condition functions end a wait by returning an error.
       */
      cannotSucceed?: (value: T) => string | undefined;
    },
  ): Promise<T>;
  results(): AssertionResult[];
}

/** The CRI reads and writes scenarios need, in plain shapes. */
export interface CriView {
  version(): Promise<{ runtimeName: string; runtimeVersion: string }>;
  listContainers(filter?: { labelSelector?: Record<string, string> }): Promise<CriItem[]>;
  listPodSandbox(filter?: { labelSelector?: Record<string, string> }): Promise<CriItem[]>;
  /** undefined when the runtime does not have the image. */
  imageStatus(ref: string): Promise<{ id: string; size: number } | undefined>;
  pullImage(ref: string): Promise<string>;
}

export interface CriItem {
  id: string;
  state: string;
  labels: Record<string, string>;
  createdAt: number; // epoch ms
}

export class AssertionFailure extends Error {
  constructor(readonly assertion: AssertionResult) {
    super(assertion.message ?? `${assertion.name} failed`);
    this.name = 'AssertionFailure';
  }
}

/** Thrown by ScenarioContext.skip: the runner records the cell as skipped with the reason. */
export class ScenarioSkipped extends Error {
  override readonly name = 'ScenarioSkipped';
}

export type TimelineSink = (entry: Omit<TimelineEntry, 't'>) => void;
