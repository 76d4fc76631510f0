import { parseArgs } from 'node:util';
import type { Scenario } from '../framework/scenario.js';
import { parseShard } from './shard.js';

export interface RunOptions {
  runtimes: string[] | undefined; // undefined: every registered backend
  scenarios: string[] | undefined; // undefined: every scenario of the suite
  outDir: string;
  /** Module that exports `scenarios: Scenario[]` (a package name or a path). */
  suite: string;
  /** Backend modules to load on top of the built-ins and kh.config.json's (`--backend`, repeatable). */
  backends?: string[];
  /** The endpoint backend's CRI socket (`--cri-endpoint unix:///...`). */
  criEndpoint?: string;
  /** Run only this part of the matrix (`--shard i/n`). */
  shard?: { index: number; total: number };
  /** Earlier results.json files or directories that time the cells for the shard split. */
  durations?: string[];
}

export const RUN_USAGE = `Usage: kubelet-harness run [options]

Brings up the run's world (network, fake apiserver, registry), one node per runtime with our
node agent, runs every scenario on every node and writes results.json and junit.xml.

Options:
  -r, --runtime <a,b>    runtimes (backends) to run, default all   (env KH_RUNTIME)
  -s, --scenario <a,b>   scenarios to run, default all             (env KH_SCENARIO)
  -o, --out <dir>        where results go, default .reports/e2e    (env KH_OUT)
      --suite <module>   scenario suite module, default @kh/e2e
      --backend <module> load a backend module (package name or path); repeatable, added to
                         kh.config.json's "backends"                 (env KH_BACKENDS, a,b;
                         KH_CONFIG names another config file, empty: none)
      --cri-endpoint <unix:///path>  the CRI socket the endpoint backend runs the agent
                         against, on this host                       (env KH_CRI_ENDPOINT)
      --shard <i/n>      run only shard i of n of the selected matrix   (env KH_SHARD)
      --durations <p,q>  results.json files or directories whose durations balance the
                         shards (default: static estimates per scenario)  (env KH_DURATIONS)
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
      out: { type: 'string', short: 'o' },
      suite: { type: 'string' },
      backend: { type: 'string', multiple: true },
      'cri-endpoint': { type: 'string' },
      shard: { type: 'string' },
      durations: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
    strict: true,
  });
  const shard = values.shard ?? env.KH_SHARD;
  const durations = list(values.durations ?? env.KH_DURATIONS);
  if (durations && !shard) throw new Error('--durations only applies with --shard');
  return {
    ...(shard ? { shard: parseShard(shard) } : {}),
    ...(durations ? { durations } : {}),
    runtimes: list(values.runtime ?? env.KH_RUNTIME),
    scenarios: list(values.scenario ?? env.KH_SCENARIO),
    outDir: values.out ?? env.KH_OUT ?? '.reports/e2e',
    suite: values.suite ?? '@kh/e2e',
    ...(values.backend ? { backends: values.backend } : {}),
    ...(values['cri-endpoint'] ? { criEndpoint: values['cri-endpoint'] } : {}),
    help: values.help ?? false,
  };
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
