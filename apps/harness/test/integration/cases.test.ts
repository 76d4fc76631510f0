// `kubelet-harness run` on the fake runtime with a suite whose scenario declares named cases: each
// case has its own result in results.json and its own testcase in junit.xml; `--case` runs the
// matching cases only, `--conformance` the [NodeConformance] ones; the cell fails when a case does.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeLeftovers } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/node/project.js';
import type { RunResults } from '../../src/results/model.js';

const cli = join(projectRoot(), 'apps/harness/dist/cli.js');
let dir: string;
const runIds: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-cases-run-'));
  await writeFile(
    join(dir, 'suite.mjs'),
    `export const scenarios = [
  { name: 'closure', description: 'one closure', isolation: 'namespace', run: async (ctx) => ctx.check.ok('fine', true) },
  {
    name: 'declared',
    description: 'three cases',
    isolation: 'namespace',
    setup: async (ctx) => ({ node: ctx.nodeName }),
    cases: [
      { name: 'Probing container should be restarted with a /healthz http liveness probe', tags: ['NodeConformance', 'Conformance'],
        run: async (ctx, shared) => ctx.check.equal('the node the set-up saw', shared.node, ctx.nodeName) },
      { name: 'Probing container should be restarted with a local redirect http liveness probe',
        run: async (ctx) => ctx.check.equal('restart count', 0, 1) },
      { name: 'Probing container should *not* be restarted with a GRPC liveness probe', tags: ['NodeConformance', 'Conformance'],
        run: async (ctx) => ctx.skip('no gRPC health server image') },
    ],
  },
];
`,
  );
});
afterAll(async () => {
  for (const runId of runIds) await removeLeftovers({ runId });
  await rm(dir, { recursive: true, force: true });
}, 60_000);

async function run(name: string, ...args: string[]) {
  const out = join(dir, name);
  const child = spawn(
    process.execPath,
    [cli, 'run', '-r', 'fake', '--suite', join(dir, 'suite.mjs'), '-o', out, ...args],
    {
      env: { ...process.env, KH_CONFIG: '', KH_STATE_DIR: join(dir, 'ledger'), KH_RUN_ID: '' },
      stdio: 'pipe',
    },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const runId = /run (\w[\w-]*):/.exec(stderr)?.[1];
  if (runId) runIds.push(runId);
  const read = async () => ({
    results: JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as RunResults,
    junit: await readFile(join(out, 'junit.xml'), 'utf8'),
  });
  return { code, stderr, read };
}

const outcomes = (r: RunResults) =>
  r.cells.flatMap((c) =>
    (c.cases ?? []).map(
      (k) => `${c.scenario} › ${k.name.replace('Probing container should ', '')}: ${k.outcome}`,
    ),
  );

describe('kubelet-harness run with declared cases', () => {
  it('records every case, fails the cell and the run on a failed case, and writes a testcase per case', async () => {
    const all = await run('all');
    expect(all.code, all.stderr).toBe(1);
    const { results, junit } = await all.read();
    expect(results.cells.map((c) => `${c.scenario}:${c.outcome}`)).toEqual([
      'closure:passed',
      'declared:failed',
    ]);
    expect(outcomes(results)).toEqual([
      'declared › be restarted with a /healthz http liveness probe: passed',
      'declared › be restarted with a local redirect http liveness probe: failed',
      'declared › *not* be restarted with a GRPC liveness probe: skipped',
    ]);
    expect(junit).toContain('tests="4" failures="1" skipped="1"');
    expect(junit).toContain(
      'classname="kubelet-harness.fake.declared" name="Probing container should be restarted with a /healthz http liveness probe [NodeConformance] [Conformance]"',
    );
    expect(junit).toContain('<failure message="restart count: values differ">');
  }, 240_000);

  it('--case runs only the matching cases and leaves out scenarios without one; --conformance the [NodeConformance] ones', async () => {
    const focused = await run('focused', '--case', 'healthz');
    expect(focused.code, focused.stderr).toBe(0);
    const { results } = await focused.read();
    expect(results.scenarios).toEqual(['declared']);
    expect(outcomes(results)).toEqual([
      'declared › be restarted with a /healthz http liveness probe: passed',
      'declared › be restarted with a local redirect http liveness probe: skipped',
      'declared › *not* be restarted with a GRPC liveness probe: skipped',
    ]);
    expect(results.cells[0]?.cases?.[1]?.reason).toBe('not selected by --case healthz');

    const conformance = await run('conformance', '--conformance');
    expect(conformance.code, conformance.stderr).toBe(0);
    expect(outcomes((await conformance.read()).results)).toEqual([
      'declared › be restarted with a /healthz http liveness probe: passed',
      'declared › be restarted with a local redirect http liveness probe: skipped',
      'declared › *not* be restarted with a GRPC liveness probe: skipped',
    ]);

    const none = await run('none', '--case', 'no such case');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no case matches --case no such case in scenarios closure, declared');
  }, 360_000);
});
