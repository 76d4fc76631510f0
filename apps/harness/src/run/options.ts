import os from 'node:os';
import { parseArgs } from 'node:util';
import { formatDuration, parseDuration } from '@kh/node-agent';
import type { Scenario } from '../framework/scenario.js';
import type { CaseSelection } from './cases.js';
import { parseShard } from './shard.js';
import { DEFAULT_RUN_TIMEOUT_MS, MAX_TIMER_MS } from './timeout.js';

export interface RunOptions {
  runtimes: string[] | undefined; // undefined: every registered backend
  scenarios: string[] | undefined; // undefined: every scenario of the suite
  outDir: string;
  /** Module that exports `scenarios: Scenario[]` (a package name or a path); default kh.config.json's. */
  suite?: string;
  /** Backend modules to load on top of the built-ins and kh.config.json's (`--backend`, repeatable). */
  backends?: string[];
  /** The endpoint backend's CRI socket (`--cri-endpoint unix:///...`). */
  criEndpoint?: string;
  /** Run only this part of the matrix (`--shard i/n`). */
  shard?: { index: number; total: number };
  /** Earlier results.json files or directories that time the cells (shard split, cell order). */
  durations?: string[];
  /** Nodes per runtime at most (`--nodes-per-runtime`); default DEFAULT_NODES_PER_RUNTIME. */
  nodesPerRuntime?: number;
  /** Cells running at once in the run (`--max-parallel-cells`); default defaultMaxParallelCells(). */
  maxParallelCells?: number;
  /** Which declared cases run (`--case`, `--conformance`); absent: all of them. */
  cases?: CaseSelection;
  /** The run's time limit (`--timeout`), 0 for none; default DEFAULT_RUN_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * Four nodes per runtime: on 2 cores that keeps the core matrix near its longest chain of cells
 * (the disk-pressure cells, which hold the host's disk one at a time), and more nodes only add
 * agents competing for the CPU.
 */
export const DEFAULT_NODES_PER_RUNTIME = 4;

/**
 * Three cells per CPU: most of a cell's time is waiting (probe windows, grace periods, GC ages),
 * but pod start-up and exec probes are CPU work, and every node's agent and runtime share the
 * host. Measured on 2 cores (README, "Parallel cells"): 22 cells at once overloaded the host (load
 * 66, 16 cells failed their waits); at 4 the core matrix ran at 0.9 of 2 cores and its wall time
 * was set by the schedule; at 6 it kept its CPU-seconds and finished in 642 s instead of 842 s.
 * Heavy cells stay at half of this (the scheduler's rule), which is what keeps probe timeouts away.
 */
export const defaultMaxParallelCells = (cpus = os.cpus().length): number => Math.max(2, 3 * cpus);

export const RUN_USAGE = `Usage: kubelet-harness run [options]

Brings up the run's world (network, fake apiserver, registry), nodes of every runtime with our
node agent, runs every scenario on every runtime and writes results.json and junit.xml.

Options:
  -r, --runtime <a,b>    runtimes (columns) to run, by name or alias (containerd =
                         containerd-1.7); default: the default release's columns and
                         the fake; "all": every column        (env KH_RUNTIME)
  -s, --scenario <a,b>   scenarios to run, default all             (env KH_SCENARIO)
      --case <regex>     run only the declared cases whose name (with its [labels])
                         matches, as ginkgo's --focus; scenarios without such a case
                         are left out                                (env KH_CASE)
      --conformance      run only the [NodeConformance] cases      (env KH_CONFORMANCE=1)
  -o, --out <dir>        where results go, default .reports/e2e    (env KH_OUT)
      --suite <module>   scenario suite module, default kh.config.json's "suite"
      --backend <module> load a backend module (package name or path); repeatable, added to
                         kh.config.json's "backends"                 (env KH_BACKENDS, a,b;
                         KH_CONFIG names another config file, empty: none)
      --cri-endpoint <unix:///path>  the CRI socket the endpoint backend runs the agent
                         against, on this host                       (env KH_CRI_ENDPOINT)
      --shard <i/n>      run only shard i of n of the selected matrix   (env KH_SHARD)
      --durations <p,q>  results.json files or directories whose durations balance the
                         shards and order the cells (default: static estimates per
                         scenario)                                   (env KH_DURATIONS)
      --nodes-per-runtime <n>  nodes each runtime may start, default ${DEFAULT_NODES_PER_RUNTIME}: cells that
                         change a node get one to themselves, side by side; cells that
                         only touch their namespace share one      (env KH_NODES_PER_RUNTIME)
      --max-parallel-cells <n>  cells running at once in the run, default 3 per CPU
                         (${defaultMaxParallelCells()} here); 1 runs the matrix one cell at a time  (env KH_MAX_PARALLEL_CELLS)
      --timeout <duration>  the run's time limit, as ginkgo's --timeout (default
                         ${formatDuration(DEFAULT_RUN_TIMEOUT_MS)}, 0: none): then no cell starts, the running ones
                         fail, the rest fail as not run, and clean-up and the
                         results still follow                        (env KH_TIMEOUT)
  -h, --help

Exit status: 0 every cell passed or was skipped, 1 a cell failed, 2 bad arguments,
130 interrupted (clean-up still ran).`;

/** A comma-separated flag value; undefined when it names nothing. */
export const list = (v: string | undefined): string[] | undefined => {
  const items = (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
};

/** `run` flags; KH_RUNTIME / KH_SCENARIO filter the matrix the same way (handy through turbo). */
export function parseRunOptions(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): RunOptions & { help: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      runtime: { type: 'string', short: 'r' },
      scenario: { type: 'string', short: 's' },
      case: { type: 'string' },
      conformance: { type: 'boolean' },
      out: { type: 'string', short: 'o' },
      suite: { type: 'string' },
      backend: { type: 'string', multiple: true },
      'cri-endpoint': { type: 'string' },
      shard: { type: 'string' },
      durations: { type: 'string' },
      'nodes-per-runtime': { type: 'string' },
      'max-parallel-cells': { type: 'string' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
    strict: true,
  });
  const shard = values.shard ?? env.KH_SHARD;
  const durations = list(values.durations ?? env.KH_DURATIONS);
  const nodesPerRuntime = count('nodes-per-runtime', values['nodes-per-runtime'] ?? env.KH_NODES_PER_RUNTIME);
  const maxParallelCells = count(
    'max-parallel-cells',
    values['max-parallel-cells'] ?? env.KH_MAX_PARALLEL_CELLS,
  );
  const timeoutMs = runTimeoutMs(values.timeout ?? env.KH_TIMEOUT);
  const cases = caseSelection(
    values.case ?? env.KH_CASE,
    values.conformance ?? (env.KH_CONFORMANCE === '1' || env.KH_CONFORMANCE === 'true'),
  );
  return {
    ...(cases ? { cases } : {}),
    ...(nodesPerRuntime !== undefined ? { nodesPerRuntime } : {}),
    ...(maxParallelCells !== undefined ? { maxParallelCells } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(shard ? { shard: parseShard(shard) } : {}),
    ...(durations ? { durations } : {}),
    runtimes: list(values.runtime ?? env.KH_RUNTIME),
    scenarios: list(values.scenario ?? env.KH_SCENARIO),
    outDir: values.out ?? env.KH_OUT ?? '.reports/e2e',
    ...(values.suite ? { suite: values.suite } : {}),
    ...(values.backend ? { backends: values.backend } : {}),
    ...(values['cri-endpoint'] ? { criEndpoint: values['cri-endpoint'] } : {}),
    help: values.help ?? false,
  };
}

/** `--case` and `--conformance`; undefined when they select every case. */
function caseSelection(pattern: string | undefined, conformance: boolean): CaseSelection | undefined {
  let re: RegExp | undefined;
  if (pattern) {
    try {
      re = new RegExp(pattern);
    } catch (err) {
      throw new Error(`--case is not a regular expression: ${(err as Error).message}`);
    }
  }
  if (!re && !conformance) return undefined;
  return { ...(re ? { pattern: re } : {}), ...(conformance ? { conformance } : {}) };
}

/** A `--<flag> n` count: undefined when absent or empty, else a whole number ≥ 1. */
function count(flag: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a whole number ≥ 1, got "${value}"`);
  return n;
}

/** `--timeout`: a Go duration ("50m", "1h30m") or 0; undefined when absent or empty. */
function runTimeoutMs(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (err) {
    throw new Error(`--timeout: ${(err as Error).message}, e.g. "50m" or "1h30m" (0: none)`);
  }
  if (ms < 0 || ms > MAX_TIMER_MS)
    throw new Error(`--timeout must be between 0 (none) and ${formatDuration(MAX_TIMER_MS)}, got "${value}"`);
  return ms;
}

/** The named scenarios (all when `names` is undefined), in suite order; unknown names are an error. */
export function selectScenarios(
  suite: readonly Scenario[],
  names: readonly string[] | undefined,
): Scenario[] {
  if (!names) return [...suite];
  const unknown = names.filter((n) => !suite.some((s) => s.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown scenario ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${suite.map((s) => s.name).join(', ')}`,
    );
  }
  return suite.filter((s) => names.includes(s.name));
}
