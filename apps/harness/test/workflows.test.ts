// The GitHub Actions workflows: valid against SchemaStore's workflow schema (a committed copy,
// test/fixtures/github-workflow.schema.json; source and licence in github-workflow.schema.md),
// shaped as issue 18 asks (nightly: runtimes × shards, merge, JUnit, baseline; pr: checks and one
// fast cell per runtime with real containers), and running only commands this repository's own
// tests or CI already run.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENDPOINT_BACKEND } from '../src/backends/endpoint.js';
import { BACKENDS, isDefaultColumn } from '../src/backends/registry.js';
import { projectRoot } from '../src/node/project.js';

const root = projectRoot();
const dir = join(root, '.github/workflows');
const files = readdirSync(dir).filter((f) => f.endsWith('.yml'));
const load = (name: string) => parse(readFileSync(join(dir, name), 'utf8'));
const schema = JSON.parse(
  readFileSync(join(root, 'apps/harness/test/fixtures/github-workflow.schema.json'), 'utf8'),
);
// The schema uses keywords and formats of its own draft that ajv's strict mode flags.
const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);

interface Step {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  if?: string;
  'continue-on-error'?: boolean;
  with?: Record<string, string>;
  env?: Record<string, string>;
}
interface Job {
  name?: string;
  needs?: string | string[];
  if?: string;
  'runs-on': unknown;
  env?: Record<string, string>;
  outputs?: Record<string, string>;
  strategy?: { matrix: Record<string, unknown> };
  steps: Step[];
}
const jobsOf = (wf: { jobs: Record<string, Job> }) => Object.entries(wf.jobs);

describe('the workflows', () => {
  it('are nightly.yml and pr.yml', () => {
    expect(files.sort()).toEqual(['nightly.yml', 'pr.yml']);
  });

  it.each(files)('%s is valid against the GitHub Actions workflow schema', (file) => {
    expect(validate(load(file)), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it('the schema check catches a broken workflow', () => {
    const wf = load('pr.yml');
    wf.jobs.checks['runs-of'] = wf.jobs.checks['runs-on'];
    delete wf.jobs.checks['runs-on'];
    expect(validate(wf)).toBe(false);
  });

  // Each command a job runs is one the repository already runs elsewhere, so a workflow never
  // depends on a command no test exercises. [pattern of a command line, file that runs it, evidence]
  const KNOWN: [RegExp, string, string][] = [
    [/^bash scripts\/test\.sh$/, '.ci/run', 'bash scripts/test.sh'],
    [
      /^bash scripts\/e2e\.sh( --runtime \$\{\{ matrix\.runtime \}\} --scenario node-registration)?$/,
      '.ci/run',
      'bash scripts/e2e.sh',
    ],
    [/^source scripts\/prepare\.sh$/, 'scripts/e2e.sh', 'source scripts/prepare.sh'],
    [/^bash scripts\/setup-host\.sh$/, 'scripts/prepare.sh', 'bash scripts/setup-host.sh'],
    [/^npm ci && npx turbo run build --filter=\S+( --filter=\S+)*$/, 'scripts/prepare.sh', 'npm ci'],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js list --json > backends\.json$/,
      'apps/harness/test/cli.test.ts',
      "'list', '--json'",
    ],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js run$/,
      'apps/harness/test/integration/sharded.test.ts',
      "'run'",
    ],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js merge /,
      'apps/harness/test/integration/sharded.test.ts',
      "'merge'",
    ],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js report .*--fail-on-regression$/,
      'apps/harness/test/integration/sharded.test.ts',
      "'--fail-on-regression'",
    ],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js cleanup \|\| true$/,
      'apps/harness/test/integration/cleanup.test.ts',
      'cleanup',
    ],
    [
      /^node_modules\/\.bin\/node apps\/harness\/dist\/cli\.js history "\$\{inputs\[@\]\}" .*--fail-after \d+ --stale-hours \d+ /,
      'apps/harness/test/history/history.test.ts',
      "main(['history'",
    ],
    [/^npx turbo run bench --continue$/, 'README.md', 'npx turbo run bench'],
    [
      /^KH_REAL_RESULTS="\$MERGED\/results\.json" npm run test:report-real -w @kh\/harness$/,
      '.ci/run',
      'npm run --silent test:report-real -w @kh/harness',
    ],
  ];
  // Shell around the commands: conditions, exports, echo into GITHUB_OUTPUT.
  const SHELL = /^(if \[|baseline=\(|inputs=\(|echo "runtimes=|fi$)/;

  it.each(files)('%s runs only commands the repository already runs', (file) => {
    for (const [id, job] of jobsOf(load(file))) {
      for (const step of job.steps) {
        for (const line of (step.run ?? '').split('\n').map((l) => l.trim())) {
          if (!line || SHELL.test(line)) continue;
          const known = KNOWN.find(([re]) => re.test(line));
          expect(known, `${file} ${id}: ${line}`).toBeDefined();
        }
      }
    }
  });

  it.each(KNOWN.map(([re, where, evidence]) => [String(re), where, evidence]))(
    '%s is run by %s',
    (_, where, evidence) => {
      expect(readFileSync(join(root, where), 'utf8')).toContain(evidence);
    },
  );

  it.each(files)(
    '%s uses only pinned major versions of actions, and uploads .reports (a hidden directory)',
    (file) => {
      for (const [, job] of jobsOf(load(file))) {
        for (const s of job.steps) {
          expect(Boolean(s.uses) !== Boolean(s.run), JSON.stringify(s)).toBe(true);
          if (s.uses) expect(s.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
          if (s.uses?.startsWith('actions/upload-artifact') && s.with?.path?.includes('.reports/'))
            expect(s.with['include-hidden-files']).toBe(true);
        }
      }
    },
  );
});

describe('nightly.yml', () => {
  const wf = load('nightly.yml');
  const { backends, e2e, merge } = wf.jobs as Record<string, Job>;

  it('is scheduled and can be started by hand', () => {
    expect(Object.keys(wf.on)).toEqual(expect.arrayContaining(['schedule', 'workflow_dispatch']));
    expect(wf.on.schedule[0].cron).toMatch(/^(\S+\s){4}\S+$/);
  });

  it('fans out over the registered backends (`list --json`) × shards, each job one `run --shard i/n`', () => {
    const list = backends!.steps.find((s) => s.id === 'list')!;
    expect(list.run).toContain('apps/harness/dist/cli.js list --json');
    expect(backends!.outputs!.runtimes).toBe('${{ steps.list.outputs.runtimes }}');
    expect(e2e!.needs).toContain('backends');
    expect(e2e!.strategy!.matrix.runtime).toBe('${{ fromJSON(needs.backends.outputs.runtimes) }}');
    const shards = e2e!.strategy!.matrix.shard as number[];
    expect(shards).toEqual(shards.map((_, i) => i + 1));
    expect(e2e!.env!.KH_SHARD).toBe(`\${{ matrix.shard }}/${shards.length}`);
    expect(e2e!.env!.KH_RUNTIME).toBe('${{ matrix.runtime }}');
    expect(e2e!.steps.some((s) => s.run?.trim().endsWith('apps/harness/dist/cli.js run'))).toBe(true);
    const upload = e2e!.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
    expect(upload.with!.name).toBe('kh-shard-${{ matrix.runtime }}-${{ matrix.shard }}');
    expect(upload.if).toBe('always()');
  });

  it('balances the shards by the last green nightly, and compares the merged run with it', () => {
    const lastGreen = wf.jobs['last-green'] as Job;
    const find = lastGreen.steps.find((s) => s.id === 'find')!;
    expect(find.with!.script).toContain("status: 'success'");
    expect(find.with!.script).toContain("workflow_id: 'nightly.yml'");
    const downloads = [...e2e!.steps, ...merge!.steps].filter(
      (s) => s.uses?.startsWith('actions/download-artifact') && s.with?.name === 'kubelet-harness-merged',
    );
    expect(downloads).toHaveLength(2);
    for (const d of downloads) {
      expect(d.uses).toMatch(/^actions\/download-artifact@v\d+$/);
      expect(d.with!['run-id']).toBe('${{ needs.last-green.outputs.run-id }}');
    }
    expect(e2e!.steps.find((s) => s.run?.includes('KH_DURATIONS'))?.run).toContain(
      'export KH_DURATIONS=.reports/last-green',
    );
  });

  it('merges every shard, publishes JUnit, gates on regressions, opens the report in Chromium, keeps it', () => {
    expect(merge!.needs).toEqual(expect.arrayContaining(['e2e', 'last-green']));
    expect(merge!.if).toBe('always()');
    const steps = merge!.steps;
    expect(steps.find((s) => s.with?.pattern)?.with?.pattern).toBe('kh-shard-*');
    expect(steps.find((s) => s.run?.includes('cli.js merge'))?.run).toContain('--out "$MERGED"');
    expect(steps.find((s) => s.uses?.startsWith('mikepenz/action-junit-report'))?.with?.report_paths).toBe(
      '.reports/merged/junit.xml',
    );
    const report = steps.find((s) => s.run?.includes('cli.js report'))!.run!;
    expect(report).toContain('--baseline .reports/last-green');
    expect(report).toContain('--fail-on-regression');
    const real = steps.find((s) => s.run?.includes('test:report-real'))!;
    expect(real.if).toBe('always()');
    const pkg = JSON.parse(readFileSync(join(root, 'apps/harness/package.json'), 'utf8'));
    expect(pkg.scripts['test:report-real']).toContain('test/report/client/real-run.test.ts');
    const upload = steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
    expect(upload.with!.name).toBe('kubelet-harness-merged');
    for (const f of ['results.json', 'junit.xml', 'report.html'])
      expect(upload.with!.path).toContain(`.reports/merged/${f}`);
    expect(upload.with!.path).toContain('apps/harness/.reports/screenshots/');
    // The screenshot's directory is where the Chromium tests write it.
    expect(readFileSync(join(root, 'apps/harness/test/report/client/real-run.test.ts'), 'utf8')).toContain(
      "'../../../.reports/screenshots/'",
    );
  });
});

describe('nightly.yml history', () => {
  const wf = load('nightly.yml');
  const history = wf.jobs.history as Job;

  it("extends the previous nightly's history with tonight's merged results, alerting and summing up", () => {
    expect(history.needs).toEqual(['merge', 'bench']);
    expect(history.if).toBe('always()');
    const previous = history.steps.find((s) => s.id === 'previous')!;
    expect(previous.with!.script).toContain("workflow_id: 'nightly.yml'");
    expect(previous.with!.script).toContain("status: 'completed'");
    expect(previous.with!.script).toContain('r.id !== context.runId');
    const downloads = history.steps.filter((s) => s.uses?.startsWith('actions/download-artifact'));
    expect(downloads.map((d) => [d.with!.name, d.with!['run-id']])).toEqual([
      ['kubelet-harness-history', `\${{ steps.previous.outputs.run-id }}`],
      ['kubelet-harness-merged', undefined],
      ['kubelet-harness-bench', undefined],
    ]);
    const run = history.steps.find((s) => s.run?.includes('cli.js history'))!.run!;
    for (const part of [
      'inputs+=(.reports/merged/results.json)',
      'inputs+=(--from .reports/history-previous)',
      '--out .reports/history',
      '--reports 7',
      '--run-url "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID"',
      '--fail-after 3',
      '--stale-hours 36',
      'inputs+=(--bench .reports/bench)',
      '--bench-regression 25 --bench-window 5',
      '--summary "$GITHUB_STEP_SUMMARY"',
    ])
      expect(run).toContain(part);
    const upload = history.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
    expect(upload.if).toBe('always()');
    expect(upload.with!.name).toBe('kubelet-harness-history');
    expect(upload.with!.path).toBe('.reports/history/');
    // What the next night downloads is what this night uploads.
    expect(downloads[0]!.with!.path).toBe('.reports/history-previous');
  });

  it("judges tonight's benchmarks, which a job of their own ran and uploaded, against the nights before", () => {
    const bench = wf.jobs.bench as Job;
    expect(bench.steps.find((s) => s.run?.includes('turbo run bench'))!.run).toContain(
      'source scripts/prepare.sh',
    );
    const upload = bench.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
    expect(upload.if).toBe('always()');
    expect(upload.with!.name).toBe('kubelet-harness-bench');
    // Where every package's bench writes (packages/*/bench: "Writes JSON to .reports/bench/").
    expect(upload.with!.path).toContain('packages/*/.reports/bench/');
    expect(upload.with!.path).toContain('apps/*/.reports/bench/');
    const download = history.steps.find((s) => s.with?.name === 'kubelet-harness-bench')!;
    expect(download['continue-on-error']).toBe(true);
    expect(download.with!.path).toBe('.reports/bench');
  });
});

describe("nightly.yml history: the previous nightly's script", () => {
  const script = (
    (load('nightly.yml').jobs.history as Job).steps.find((s) => s.id === 'previous')!.with!.script as string
  ).trim();
  type Artifact = { name: string; expired: boolean };
  // github-script runs the script as the body of an async function of github, context and core.
  const find = async (runs: { id: number; artifacts: Artifact[] }[], runId = 900) => {
    const outputs: Record<string, string> = {};
    const asked: number[] = [];
    const github = {
      rest: {
        actions: {
          listWorkflowRuns: async (q: { workflow_id: string; status: string }) => {
            expect(q).toMatchObject({ workflow_id: 'nightly.yml', status: 'completed' });
            return { data: { workflow_runs: runs.map(({ id }) => ({ id })) } };
          },
          listWorkflowRunArtifacts: async (q: { run_id: number }) => {
            asked.push(q.run_id);
            return { data: { artifacts: runs.find((r) => r.id === q.run_id)!.artifacts } };
          },
        },
      },
    };
    const context = { runId, repo: { owner: 'o', repo: 'r' } };
    const core = {
      setOutput: (k: string, v: string) => {
        outputs[k] = v;
      },
      info: () => {},
    };
    const body = Object.getPrototypeOf(async () => {}).constructor('github', 'context', 'core', script);
    await body(github, context, core);
    return { runId: outputs['run-id'], asked };
  };
  const history: Artifact = { name: 'kubelet-harness-history', expired: false };
  const merged: Artifact = { name: 'kubelet-harness-merged', expired: false };

  it('takes the newest earlier nightly that holds a history', async () => {
    expect(
      await find([
        { id: 899, artifacts: [merged, history] },
        { id: 898, artifacts: [history] },
      ]),
    ).toEqual({
      runId: '899',
      asked: [899],
    });
  });

  it('passes over nights without one (cancelled before the upload, or expired) rather than start over', async () => {
    const r = await find([
      { id: 900, artifacts: [history] },
      { id: 899, artifacts: [] },
      { id: 898, artifacts: [merged, { ...history, expired: true }] },
      { id: 897, artifacts: [history] },
    ]);
    expect(r).toEqual({ runId: '897', asked: [899, 898, 897] });
  });

  it('says none when no earlier nightly holds one', async () => {
    expect((await find([{ id: 899, artifacts: [merged] }])).runId).toBe('');
    expect((await find([])).runId).toBe('');
  });
});

describe('pr.yml', () => {
  const wf = load('pr.yml');

  it('runs on pull requests: lint, typecheck and the tests through scripts/test.sh', () => {
    expect(Object.keys(wf.on)).toEqual(['pull_request']);
    expect(wf.jobs.checks.steps.map((s: Step) => s.run).filter(Boolean)).toEqual(['bash scripts/test.sh']);
    const script = readFileSync(join(root, 'scripts/test.sh'), 'utf8');
    for (const part of ['npx biome ci .', 'npx turbo run typecheck', 'npx turbo run test'])
      expect(script).toContain(part);
  });

  it("runs node-registration on the default release's built-in runtimes with real containers", () => {
    const job = wf.jobs['fast-cell'] as Job;
    // The endpoint backend drives a CRI socket the user brings; CI has none. The other releases'
    // columns run nightly.
    const real = BACKENDS.filter(
      (b) => b.capabilities.has('real-containers') && b.name !== ENDPOINT_BACKEND && isDefaultColumn(b),
    );
    expect(job.strategy!.matrix.runtime).toEqual(real.map((b) => b.name));
    expect(job.steps.find((s) => s.run?.startsWith('bash scripts/e2e.sh'))?.run).toBe(
      'bash scripts/e2e.sh --runtime ${{ matrix.runtime }} --scenario node-registration',
    );
  });
});
