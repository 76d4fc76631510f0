// `kubelet-harness churn`: the command around churn.ts.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dockerBackend, dockerBackends } from '../backends/docker.js';
import { loadBackends, selectBackends } from '../backends/registry.js';
import type { RuntimeBackend } from '../backends/types.js';
import type { Progress } from '../support/progress.js';
import { runChurn } from './churn.js';

export const CHURN_USAGE = `Usage: kubelet-harness churn --runtime <column> [options]

Creates pods and tears them all down at once, in a loop, against one column's runtime (a node of
its own, no agent), until the runtime hangs or the rounds run out. A runtime that answers CRI
Version but not Status is hung: its goroutine dump is written to <out>/<column>-stacks.log and
searched for moby/libnetwork#2649's two goroutines. The summary is <out>/<column>.json.

Options:
  -r, --runtime <column>   one column or alias (kubelet-harness list), e.g. docker-20.10
      --pods <n>           pods per round, created together and removed together (default 22:
                           a probe suite's pods)
      --rounds <n>         rounds at most (default 30)
      --call-timeout <s>   per CRI call; a slower call is a hang suspect (default 60)
      --status-every <ms>  CRI Status meanwhile, as an agent's health checks ask it
                           (default 1000; 0: never)
      --network-plugin <cni|docker>  for a docker column: how the dockershim networks pods
                           (default cni, as the columns; docker: Docker's own bridge)
  -o, --out <dir>          default .reports/churn
      --backend <module>   load a backend module first (repeatable)
  -h, --help

Exit status: 0 no hang, 1 the runtime hung (or the run failed), 2 bad arguments.`;

export async function runChurnCommand(
  argv: string[],
  io: { out: (s: string) => void; err: (s: string) => void; signal?: AbortSignal },
  progress: Progress,
): Promise<number> {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        runtime: { type: 'string', short: 'r' },
        pods: { type: 'string', default: '22' },
        rounds: { type: 'string', default: '30' },
        'call-timeout': { type: 'string', default: '60' },
        'status-every': { type: 'string', default: '1000' },
        'network-plugin': { type: 'string' },
        out: { type: 'string', short: 'o', default: '.reports/churn' },
        backend: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`kubelet-harness churn: ${(err as Error).message}\n\n${CHURN_USAGE}\n`);
    return 2;
  }
  if (values.help) {
    io.out(`${CHURN_USAGE}\n`);
    return 0;
  }
  const count = (flag: string, min = 1) => {
    const n = Number(values[flag]);
    if (!Number.isInteger(n) || n < min)
      throw new Error(`--${flag} must be a whole number ≥ ${min}, got "${values[flag]}"`);
    return n;
  };
  let backend: Awaited<ReturnType<typeof loadBackends>>['backends'][number];
  let pods: number;
  let rounds: number;
  let callTimeoutS: number;
  let statusEveryMs: number;
  try {
    if (typeof values.runtime !== 'string') throw new Error('--runtime names the column to churn');
    pods = count('pods');
    rounds = count('rounds');
    callTimeoutS = count('call-timeout');
    statusEveryMs = count('status-every', 0);
    const registry = await loadBackends({ modules: (values.backend as string[] | undefined) ?? [] });
    const selected = selectBackends([values.runtime], registry.backends);
    if (selected.length !== 1)
      throw new Error(`--runtime ${values.runtime} names ${selected.length} columns`);
    backend = withNetworkPlugin(selected[0]!, values['network-plugin'] as string | undefined);
  } catch (err) {
    io.err(`kubelet-harness churn: ${(err as Error).message}\n\n${CHURN_USAGE}\n`);
    return 2;
  }
  const outDir = values.out as string;
  const summary = await runChurn(
    backend,
    { pods, rounds, callTimeoutMs: callTimeoutS * 1000, statusEveryMs, outDir },
    progress,
    io.signal,
  );
  await mkdir(outDir, { recursive: true });
  const file = join(outDir, `${backend.name}.json`);
  await writeFile(file, `${JSON.stringify(summary, null, 2)}\n`);
  const done = summary.rounds.length;
  io.out(
    summary.hang
      ? `${backend.name} (${summary.runtimeName} ${summary.runtimeVersion}) hung after round ${summary.hang.afterRound} ` +
          `(${summary.sandboxesTornDown} sandboxes torn down in ${Math.round(summary.roundsMs / 1000)} s): ${summary.hang.reason}` +
          `${summary.hang.libnetworkDeadlock ? '; the dump shows libnetwork#2649 (processEndpointDelete against sandbox.Delete)' : ''}; ${file}\n`
      : `${backend.name} (${summary.runtimeName} ${summary.runtimeVersion}): no hang in ${done} rounds of ${pods} pods ` +
          `(${summary.sandboxesTornDown} sandboxes torn down in ${Math.round(summary.roundsMs / 1000)} s); ${file}\n`,
  );
  return summary.hang ? 1 : 0;
}

/** The same docker column with the dockershim on another network plugin; other columns have none. */
function withNetworkPlugin(backend: RuntimeBackend, plugin: string | undefined): RuntimeBackend {
  if (plugin === undefined) return backend;
  if (plugin !== 'cni' && plugin !== 'docker')
    throw new Error(`--network-plugin must be cni or docker, got "${plugin}"`);
  const column = dockerBackends.find((b) => b.name === backend.name);
  if (!column?.release)
    throw new Error(`--network-plugin applies to the docker columns, not ${backend.name}`);
  return dockerBackend(column.release, plugin);
}
