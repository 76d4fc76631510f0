// Ten synthetic nightly runs for the history tests, oldest first, one day apart, each on its own
// commit except the fifth (a re-run of the fourth's commit). Each row is made to be one thing the
// history must recognise (results per run: P passed, F failed, S skipped, - not in the run):
//
//   containerd-1.7/node-registration  P P P P P P P P P P   passing
//   docker-26/node-registration       P P P P P P P P P P   passing (docker-26's version changes at run 6)
//   containerd-1.7/probes             P P F P P P F P P P   flaky: changed outcome 4 times; not new
//   docker-26/probes                  P P P P P P P P F P   new flake: changed twice, only once before
//   containerd-1.7/kubectl            P P P P P P F F F F   failing for 4 runs, since run 7's commit
//   docker-26/kubectl                 F F F F F F F F F P   fixed (it had failed since before the window)
//   containerd-1.7/eviction           P P P P P P P P P F   new failure, not flaky
//   docker-26/eviction                P P P P P P P P P P   flaky: run 8 passed on its second try
//   containerd-1.7/gc                 P P P P F F F F F F   failing for 6 runs, quarantined in the newest;
//                                                           flaky: passed and failed at one commit (4, 5)
//   docker-26/gc                      S S S S S S S S S S   skipped
//   containerd-1.7/pod-lifecycle      - - - - - - - P P F   new failure, in the matrix since run 8
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CellResult, Outcome, RunResults } from '../../src/results/model.js';

export const RUNS = 10;
const DAY = 24 * 3_600_000;
export const FIRST_START = Date.parse('2026-11-19T02:17:00Z');
export const startOf = (run: number) => new Date(FIRST_START + (run - 1) * DAY).toISOString();
/** The fifth run re-runs the fourth's commit. */
export const commitOf = (run: number) =>
  `${String(run === 5 ? 4 : run).padStart(2, '0')}${'c0ffee'.repeat(7)}`.slice(0, 40);
export const runIdOf = (run: number) => `nightly-${String(run).padStart(2, '0')}`;
/** When the newest run is 30 hours old. */
export const NOW = new Date(Date.parse(startOf(RUNS)) + 30 * 3_600_000);

type Pattern = string;
const ROWS: [runtime: string, scenario: string, pattern: Pattern][] = [
  ['containerd-1.7', 'node-registration', 'PPPPPPPPPP'],
  ['docker-26', 'node-registration', 'PPPPPPPPPP'],
  ['containerd-1.7', 'probes', 'PPFPPPFPPP'],
  ['docker-26', 'probes', 'PPPPPPPPFP'],
  ['containerd-1.7', 'kubectl', 'PPPPPPFFFF'],
  ['docker-26', 'kubectl', 'FFFFFFFFFP'],
  ['containerd-1.7', 'eviction', 'PPPPPPPPPF'],
  ['docker-26', 'eviction', 'PPPPPPPPPP'],
  ['containerd-1.7', 'gc', 'PPPPFFFFFF'],
  ['docker-26', 'gc', 'SSSSSSSSSS'],
  ['containerd-1.7', 'pod-lifecycle', '-------PPF'],
];

const OUTCOME: Record<string, Outcome> = { P: 'passed', F: 'failed', S: 'skipped' };

/** A failure message that names generated things, so only normalisation groups it. */
function reasonFor(scenario: string, run: number): string {
  const n = run * 7 + 3;
  switch (scenario) {
    case 'kubectl':
      return `kubectl logs --previous: pod kh-ns-${n}a/logs-${run} answered 400 after ${1000 + n} ms`;
    case 'probes':
      return `pod probes-${n}x/liveness-exec not restarted within 90 s`;
    case 'gc':
      return `image registry:5000/kh/busybox:${n}f0 still present after ${n}.5 s`;
    default:
      return `pod ${scenario}-${n} not Running within 90 s: container app waiting (ImagePullBackOff)`;
  }
}

export const QUARANTINE = {
  owner: 'sig-node-oncall',
  expires: '2026-12-31',
  reason: 'image GC race, kubernetes#0',
};

function cell(runtime: string, scenario: string, code: string, run: number): CellResult {
  const outcome = OUTCOME[code]!;
  return {
    runtime,
    scenario,
    outcome,
    ...(outcome === 'failed' ? { reason: reasonFor(scenario, run) } : {}),
    ...(outcome === 'skipped' ? { reason: 'backend docker-26 lacks gc-layouts' } : {}),
    startedAt: startOf(run),
    durationMs: outcome === 'skipped' ? 0 : 1000 * (scenario.length + run),
    assertions: [],
    timeline: [],
    logs: [],
    ...(runtime === 'docker-26' && scenario === 'eviction' && run === 8 ? { attempts: 2 } : {}),
    ...(runtime === 'containerd-1.7' && scenario === 'gc' && run === RUNS ? { quarantine: QUARANTINE } : {}),
  };
}

export function syntheticRun(run: number): RunResults {
  const cells = ROWS.filter(([, , p]) => p[run - 1] !== '-').map(([rt, sc, p]) =>
    cell(rt, sc, p[run - 1]!, run),
  );
  return {
    schemaVersion: 1,
    runId: runIdOf(run),
    commit: commitOf(run),
    startedAt: startOf(run),
    finishedAt: new Date(Date.parse(startOf(run)) + 3_600_000).toISOString(),
    durationMs: 3_600_000,
    host: { node: 'ci-1', platform: 'linux', cpus: 2 },
    runtimes: [
      { name: 'containerd-1.7', runtimeName: 'containerd', runtimeVersion: '1.7.24' },
      { name: 'docker-26', runtimeName: 'docker', runtimeVersion: run < 6 ? '26.1.5' : '26.1.6' },
    ],
    scenarios: [...new Set(cells.map((c) => c.scenario))],
    cells,
  };
}

/** Writes run-01/results.json … run-10/results.json under `dir` (the runs `from`..`to`). */
export async function writeSyntheticRuns(dir: string, from = 1, to = RUNS): Promise<void> {
  for (let run = from; run <= to; run++) {
    const at = join(dir, `run-${String(run).padStart(2, '0')}`);
    await mkdir(at, { recursive: true });
    await writeFile(join(at, 'results.json'), JSON.stringify(syntheticRun(run)));
  }
}
