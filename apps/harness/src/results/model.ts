// The one results model of a harness run. results.json, JUnit XML and the HTML report are all
// views of it, so everything a view shows must be recorded here during the run.
import { STARTUP_STAGES, type StartupStage } from '@kh/node-agent';

export const RESULTS_SCHEMA_VERSION = 1;

export type Outcome = 'passed' | 'failed' | 'skipped';

export interface AssertionResult {
  name: string;
  outcome: Outcome;
  /** Present on failure: what was expected and what was seen, as JSON-able values. */
  expected?: unknown;
  actual?: unknown;
  /** A failed eventually check's distinct (described) values, ms after it began: what it went through. */
  seen?: SeenValue[];
  message?: string;
}

export interface SeenValue {
  atMs: number;
  value: unknown;
}

export type TimelineKind =
  | 'pod-phase' // a pod's phase changed (API watch)
  | 'container-state' // a container's state changed (API watch)
  | 'node-condition' // a node condition changed status (API watch)
  | 'event' // a Kubernetes Event
  | 'cri-call' // one CRI call, through the typed client's interceptor
  | 'note'; // a harness step ("node started", "runtime stopped")

export interface TimelineEntry {
  /** Milliseconds since the scenario started. */
  t: number;
  kind: TimelineKind;
  summary: string;
  /** For cri-call: who made the call, our agent on the node or the harness (absent: harness). */
  source?: CriCallSource;
  /** For cri-call: the RPC name, its latency and its gRPC status code name. */
  method?: string;
  durationMs?: number;
  code?: string;
  /** Anything else worth showing on drill-down (object name, old and new values). */
  detail?: Record<string, unknown>;
}

export type CriCallSource = 'agent' | 'harness';

/**
 * Every CRI call of one method by one source, summarised (latencies in ms, nearest-rank
 * percentiles). The timeline keeps only a bounded selection of the agent's calls; these count all.
 */
export interface CriCallStats {
  source: CriCallSource;
  method: string;
  count: number;
  /** Calls that ended with a gRPC code other than OK. */
  errors: number;
  /** Those calls by gRPC code name (UNIMPLEMENTED, NOT_FOUND...); absent when there were none. */
  codes?: Record<string, number>;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

// The stages of a pod's start-up are the agent's: its record of each step defines them.
export { STARTUP_STAGES, type StartupStage };

/** Nearest-rank percentiles, ms. */
export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

/** One pod's start-up: creation to status written, and each stage (STARTUP_STAGES order), ms. */
export interface PodStartupRow {
  /** namespace/name */
  pod: string;
  totalMs: number;
  stagesMs: number[];
}

/** The start-up breakdown of the pods a cell started, from the agent's record of each step. */
export interface StartupBreakdown {
  /** Pods the agent saw through every step. */
  pods: number;
  /** Pods it saw that did not get through every step (adopted after an agent restart, failed, exited). */
  incomplete: number;
  total: Percentiles;
  /** One per stage, in STARTUP_STAGES order. */
  stages: ({ stage: StartupStage } & Percentiles)[];
  /** Every pod's row, when the cell started at most STARTUP_ROWS_KEPT pods. */
  perPod?: PodStartupRow[];
}

/** The runtime's bare cost of a pod: RunPodSandbox, CreateContainer and StartContainer straight over CRI. */
export interface StartupFloor {
  /** Median of single pods started one after another, ms. */
  singleMs: number;
  /** The same for `pods` pods at once. */
  burst?: { pods: number } & Percentiles;
}

/** Issue 21's target: the matrix's pod start-up p50 at most `limit` times the runtime's bare floor. */
export interface StartupTarget {
  /** p50 of every pod start-up in the run's cells (podStartupMs). */
  p50Ms: number;
  /** The startup cell's single-pod floor. */
  floorMs: number;
  ratio: number;
  limit: number;
  met: boolean;
}

export interface LogExcerpt {
  /** `runtime-stacks`: the runtime's goroutine dump, taken when it hung (run/runtime-hang.ts). */
  source: 'agent' | 'runtime' | 'runtime-stacks' | 'shim' | 'harness';
  lines: string[];
}

/**
 * The kh.config.json quarantine entry that named a cell or case when the run ended: it ran and is
 * reported, but a failure of it does not fail the run (results/quarantine.ts).
 */
export interface QuarantineRecord {
  owner: string;
  /** The last day (YYYY-MM-DD, UTC) it holds; after it the failure fails the run again. */
  expires: string;
  reason: string;
}

export type CriServiceName = 'RuntimeService' | 'ImageService';

/**
 * A row of a runtime's CRI contract table (results/contract.ts):
 * - called: the agent called it, whatever the answers (see `codes`);
 * - unimplemented: the runtime answered at least one call with UNIMPLEMENTED;
 * - not-called: the agent never called it in this run.
 */
export type CriContractStatus = 'called' | 'unimplemented' | 'not-called';

export interface CriContractRow {
  method: string;
  /** Absent for a method the agent called that kubelet 1.33 does not. */
  service?: CriServiceName;
  status: CriContractStatus;
  count: number;
  /** Failed calls by gRPC code name; absent when none failed. */
  codes?: Record<string, number>;
}

/**
 * One named case of a cell (one upstream case of a scenario, issue 34). A cell without cases is
 * one case; the history keeps a row per case when the cell has them.
 */
export interface CaseResult {
  /** Upstream's Ginkgo text without its labels (or our own words for a case upstream lacks). */
  name: string;
  /** Upstream's labels (NodeConformance, Conformance, Slow, NodeFeature:…), from the scenario. */
  tags?: string[];
  /** The kubernetes/kubernetes file of the upstream case. */
  file?: string;
  outcome: Outcome;
  /** When it started, in ms since its cell started (the cell's timeline clock). */
  offsetMs?: number;
  durationMs?: number;
  reason?: string;
  /** The case's own assertions, in order (the cell's `assertions` has them too). */
  assertions?: AssertionResult[];
  /** Pods the case created: their events in the cell's timeline are the case's (caseEvents). */
  pods?: string[];
  /** Tries it took when the suite retries (ginkgo's flake attempts): passed with attempts > 1 passed on a retry. */
  attempts?: number;
  quarantine?: QuarantineRecord;
}

/**
 * What a cell cost in CPU-seconds, from the kernel's accounting over the cell's wall time (issue 32).
 * Cells run side by side, so the two figures answer different questions: `nodeSeconds` is what the
 * cell's node spent, `hostSeconds` what the whole host did meanwhile.
 */
export interface CellCpu {
  /**
   * The node container's cgroup (the runtime, its CRI shim, our agent and, under kubepods/, the
   * pods): cpuacct.usage on cgroup v1, cpu.stat usage_usec on v2. Absent for a node that is not a
   * container (the endpoint backend) or whose cgroup could not be read.
   */
  nodeSeconds?: number;
  /** Cells that ran on the same node during this one (`runtime/scenario`): nodeSeconds is theirs too. */
  nodeSharedWith?: string[];
  /** Busy CPU of the whole host (/proc/stat: neither idle nor iowait), every parallel cell included. */
  hostSeconds?: number;
}

/** CPU-seconds of one container of the run (a node, the apiserver, a registry), from its start. */
export interface ContainerCpu {
  name: string;
  /** For a node: the runtime column it ran. */
  runtime?: string;
  seconds: number;
}

/** What the whole run cost in CPU-seconds: every container it started, the harness, and the host. */
export interface RunCpu {
  /** The node containers, each from its start to the run's end (start-up and every cell on it). */
  nodes: ContainerCpu[];
  /** The apiserver and the registries. */
  world: ContainerCpu[];
  /** This harness process (its API watches, CRI checks, scenario code). */
  harnessSeconds: number;
  /** nodes + world + harness: what the matrix cost, whatever else ran on the host. */
  totalSeconds: number;
  /** Busy CPU of the whole host over the run (/proc/stat). */
  hostSeconds?: number;
}

/** One cell of the matrix: one scenario on one runtime. */
export interface CellResult {
  runtime: string;
  scenario: string;
  /** The node the cell ran on (a runtime may run several side by side). */
  node?: string;
  outcome: Outcome;
  /** Why a cell was skipped, or the first failure's message. */
  reason?: string;
  startedAt: string; // ISO 8601
  durationMs: number;
  assertions: AssertionResult[];
  timeline: TimelineEntry[];
  logs: LogExcerpt[];
  /** Pod start-up latencies observed in this cell (creationTimestamp to all containers started). */
  podStartupMs?: number[];
  /** Where the pods' start-up went, stage by stage (pods whose agent recorded their steps). */
  startupBreakdown?: StartupBreakdown;
  /** The runtime's bare floor, measured by the `startup` scenario. */
  startupFloor?: StartupFloor;
  /** Every CRI call made during the cell, by the agent and by the harness, per method. */
  criCalls?: CriCallStats[];
  /** CPU-seconds the cell's node and the host used while it ran. */
  cpu?: CellCpu;
  /** The scenario's named cases, when it reports them (issue 34). */
  cases?: CaseResult[];
  /** Tries the cell took, when it was retried (see CaseResult.attempts). */
  attempts?: number;
  /** Set when an unexpired quarantine entry of kh.config.json names the cell: its failure does not fail the run. */
  quarantine?: QuarantineRecord;
}

export interface RuntimeInfo {
  name: string; // the column: containerd-1.7, docker-26, fake
  runtimeName: string; // from CRI Version
  runtimeVersion: string;
  /** The node image the column's nodes ran: its Debian release and runtime package versions. */
  nodeImage?: { ref: string; release: string; packages: Record<string, string> };
  /** What the run noticed about the column without failing it (a version its name does not say). */
  warnings?: string[];
  criEndpoint?: string;
  /** From start to Ready; with several nodes, the slowest one's. */
  startupMs?: number;
  /** How many nodes ran this runtime's cells, when more than one. */
  nodes?: number;
  /** Every CRI call to this runtime during the run (agent from its start, harness), per method. */
  criCalls?: CriCallStats[];
  /** Every CRI method kubelet 1.33 can call, and what came of the agent's calls (from criCalls). */
  criContract?: CriContractRow[];
  /** Pod start-up against the floor, when the run measured one (the startup scenario). */
  startupTarget?: StartupTarget;
}

export interface BenchmarkResult {
  name: string;
  /** Free-form metrics, e.g. { p50Ms: 12, p99Ms: 40, target: ... }. */
  metrics: Record<string, number | string | boolean>;
}

/** What part of the matrix a `run --shard i/n` ran; `merge` checks the parts against `matrix`. */
export interface ShardInfo {
  /** 1-based. */
  index: number;
  total: number;
  /** This shard's cells, `runtime/scenario`. */
  cells: string[];
  /** Every cell of the sharded matrix, in matrix order. */
  matrix: string[];
}

export interface RunResults {
  schemaVersion: typeof RESULTS_SCHEMA_VERSION;
  runId: string;
  /** The checkout's commit (GITHUB_SHA or `git rev-parse HEAD`), when known; `merge` refuses mixed commits. */
  commit?: string;
  shard?: ShardInfo;
  /** For a merged file: the runIds of the results it was made from. */
  mergedFrom?: string[];
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  host: {
    node: string;
    platform: string;
    cpus: number;
    /** Share of the host's CPU time that was busy during the run (0..1): is the matrix CPU-bound? */
    cpuBusy?: number;
  };
  /** CPU-seconds of the run's containers and the harness (absent when nothing could be read). */
  cpu?: RunCpu;
  runtimes: RuntimeInfo[];
  scenarios: string[];
  cells: CellResult[];
  benchmarks?: BenchmarkResult[];
}
