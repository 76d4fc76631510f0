#!/usr/bin/env node
// kubelet-harness: `run` the runtime × scenario matrix, bring a world `up` and `down` for manual
// use, turn results into a `report`, `cleanup` leftovers, `list` what can run.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type RemovedLeftovers, removeLeftovers } from '@kh/testkit';
import { ALL_RUNTIMES, isDefaultColumn, loadBackends } from './backends/registry.js';
import type { RuntimeBackend } from './backends/types.js';
import { runChurnCommand } from './churn/command.js';
import { clusterDown, clusterUp } from './cluster/cluster.js';
import type { Scenario } from './framework/scenario.js';
import { runHistoryCommand } from './history/command.js';
import { runReportCommand } from './report/cli.js';
import { runMergeCommand } from './report/merge-command.js';
import { caseTitle } from './results/cases.js';
import { failsRun } from './results/quarantine.js';
import { runHarness } from './run/harness.js';
import { parseRunOptions, RUN_USAGE } from './run/options.js';
import { moduleSpecifier } from './support/modules.js';
import { consoleProgress } from './support/progress.js';
import { projectConfig } from './support/project-config.js';
import { RunLedger } from './world/ledger.js';
import { orphanedRuns, removeRunLeftovers } from './world/leftovers.js';

export const USAGE = `Usage: kubelet-harness <command> [options]

Commands:
  run       bring up the runtimes, run the scenarios, write results.json and junit.xml
  up        bring up the world (apiserver, registry with images, a node per runtime) and leave it running
  down      remove what up brought up
  report    turn results.json into a self-contained HTML report (report --help)
  merge     merge the results.json of sharded runs (run --shard i/n) into one, with junit.xml and report
  history   many runs' results as one grid over time: flaky rows, failing streaks, failures by
            message, the benchmarks' trend; alerts for the nightly (history --help)
  cleanup   remove what interrupted runs, and tests or benchmarks killed before their teardown, left
            behind: frozen cgroups are thawed first, volumes go with their containers
            (--all: every kh-labelled object)
  list      show the registered runtimes and the suite's scenarios
            (--json: as JSON, for the nightly matrix; --backend <module>: load one more)
  churn     tear pods down in parallel, in a loop, against one runtime until it hangs
            (churn --help); the reproducer of dockerd 20.10.24's libnetwork deadlock
`;

export interface CliIO {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Aborted on the first Ctrl-C; the CLI installs its own when absent. */
  signal?: AbortSignal;
}

const defaultIO: CliIO = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };

/**
 * The scenario suite: the module `--suite` names, else kh.config.json's `suite` (this
 * repository's names @kh/e2e). The harness knows no suite of its own.
 */
export function suiteModule(flag: string | undefined, env = process.env, cwd = process.cwd()): string {
  const spec = flag ?? projectConfig(env, cwd)?.suite;
  if (!spec)
    throw new Error('no scenario suite: pass --suite <module>, or name one as "suite" in kh.config.json');
  return spec;
}

/** Loads a scenario suite module: a package name or a file path. */
export async function loadSuite(spec: string): Promise<Scenario[]> {
  const mod = (await import(moduleSpecifier(spec))) as { scenarios?: unknown };
  if (!Array.isArray(mod.scenarios)) throw new Error(`${spec} does not export \`scenarios\``);
  return mod.scenarios as Scenario[];
}

/** Resolves to the exit status; never calls process.exit (the bin does). */
export async function main(argv: string[], io: CliIO = defaultIO): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'run':
      return runCommand(rest, io);
    case 'up':
    case 'down': {
      const clusterIO = { out: io.out, progress: consoleProgress((l) => io.err(`${l}\n`)) };
      if (command === 'down') return clusterDown(rest, clusterIO);
      return clusterUp(rest, clusterIO, { backends: (await loadBackends()).backends });
    }
    case 'report':
      return runReportCommand(rest, {
        stdout: { write: io.out },
        stderr: { write: io.err },
        ...(io.signal ? { signal: io.signal } : {}),
      });
    case 'merge':
      return runMergeCommand(rest, io);
    case 'history':
      return runHistoryCommand(rest, io);
    case 'cleanup':
      return cleanupCommand(rest.includes('--all'), io);
    case 'list':
      return listCommand(rest, io);
    case 'churn':
      return runChurnCommand(
        rest,
        { ...io, signal: io.signal ?? interruptSignal(io) },
        consoleProgress((l) => io.err(`${l}\n`)),
      );
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      io.out(USAGE);
      return command === undefined ? 2 : 0;
    default:
      io.err(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

/**
 * Without --all: the runs of harness processes that are gone (the ledger), and the runs whose
 * every container's creator is gone (a test or benchmark killed before its teardown). With
 * --all: every kh-labelled object. Each removal is listed on stderr, the totals on stdout.
 */
async function cleanupCommand(all: boolean, io: CliIO): Promise<number> {
  const progress = (l: string) => io.err(`${l}\n`);
  const total: RemovedLeftovers = { containers: 0, networks: 0, volumes: 0 };
  const add = (r: RemovedLeftovers) => {
    total.containers += r.containers;
    total.networks += r.networks;
    total.volumes += r.volumes;
  };
  const runs: string[] = [];
  if (all) add(await removeLeftovers({ progress }));
  else {
    const removeRun = async (id: string) => add(await removeRunLeftovers(id, { progress }));
    runs.push(...(await new RunLedger().removeAbandoned(removeRun)));
    for (const id of await orphanedRuns()) {
      await removeRun(id);
      runs.push(id);
    }
  }
  const counts = `${total.containers} containers, ${total.networks} networks, ${total.volumes} volumes`;
  if (all) io.out(`removed ${counts}\n`);
  else
    io.out(
      runs.length ? `removed leftovers of runs ${runs.join(', ')}: ${counts}\n` : 'no interrupted runs\n',
    );
  return 0;
}

/** The registered backends (built-ins and loaded modules) and the suite's scenarios. */
async function listCommand(argv: string[], io: CliIO): Promise<number> {
  let values: { json?: boolean; backend?: string[]; suite?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean' },
        backend: { type: 'string', multiple: true },
        suite: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`kubelet-harness list: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const registry = await loadBackends({ modules: values.backend ?? [] });
  // A listing without a suite still lists the runtimes.
  const suite = await Promise.resolve()
    .then(() => loadSuite(suiteModule(values.suite)))
    .catch(() => []);
  if (values.json) {
    const runtimes = registry.registered.map(({ backend, module }) => ({
      name: backend.name,
      aliases: backend.aliases ?? [],
      ...(backend.release ? { release: backend.release } : {}),
      default: isDefaultColumn(backend),
      description: backend.description,
      capabilities: [...backend.capabilities],
      module,
    }));
    const scenarios = suite.map((s) => ({
      name: s.name,
      description: s.description,
      needs: s.needs ?? [],
      ...(s.cases
        ? {
            cases: s.cases.map((c) => ({
              name: c.name,
              tags: c.tags ?? [],
              ...(c.file ? { file: c.file } : {}),
            })),
          }
        : {}),
    }));
    io.out(`${JSON.stringify({ runtimes, scenarios })}\n`);
    return 0;
  }
  io.out(`runtimes (* in the default matrix; --runtime ${ALL_RUNTIMES} runs every one):\n`);
  for (const { backend, module } of registry.registered) {
    const aliases = backend.aliases?.length ? ` [also: ${backend.aliases.join(', ')}]` : '';
    const mark = isDefaultColumn(backend) ? '*' : ' ';
    io.out(`${mark} ${backend.name.padEnd(24)} ${backend.description}${aliases} (${module})\n`);
  }
  io.out('scenarios:\n');
  for (const s of suite) {
    io.out(`  ${s.name.padEnd(18)} ${s.description}\n`);
    // Declared cases as `--case` matches them, like ginkgo --dry-run -v.
    for (const c of s.cases ?? []) io.out(`      ${caseTitle(c)}\n`);
  }
  return 0;
}

async function runCommand(argv: string[], io: CliIO): Promise<number> {
  let opts: ReturnType<typeof parseRunOptions>;
  let suite: Scenario[];
  let backends: RuntimeBackend[];
  try {
    opts = parseRunOptions(argv);
    if (opts.help) {
      io.out(`${RUN_USAGE}\n`);
      return 0;
    }
    suite = await loadSuite(suiteModule(opts.suite));
    backends = (await loadBackends({ modules: opts.backends ?? [], criEndpoint: opts.criEndpoint })).backends;
  } catch (err) {
    io.err(`kubelet-harness run: ${(err as Error).message}\n\n${RUN_USAGE}\n`);
    return 2;
  }
  const signal = io.signal ?? interruptSignal(io);
  try {
    const { results } = await runHarness(
      opts,
      suite,
      { progress: consoleProgress((l) => io.err(`${l}\n`)), signal, print: io.out },
      { backends },
    );
    if (signal.aborted) return 130;
    // A quarantined failure is reported but does not fail the run (results/quarantine.ts).
    return results.cells.some(failsRun) ? 1 : 0;
  } catch (err) {
    io.err(`kubelet-harness run: ${(err as Error).message}\n`);
    return /^(unknown (runtime|scenario)|no case matches)/.test((err as Error).message) ? 2 : 1;
  }
}

/** First Ctrl-C: stop and clean up. Second: leave at once (the next run removes the leftovers). */
function interruptSignal(io: CliIO): AbortSignal {
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (abort.signal.aborted) {
      io.err(`${sig} again: exiting without clean-up; the next run removes the leftovers\n`);
      process.exit(130);
    }
    io.err(`${sig}: stopping; cleaning up (press Ctrl-C again to exit at once)\n`);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return abort.signal;
}

function isMain(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`kubelet-harness: ${err.message}\n`);
      process.exit(1);
    },
  );
}
