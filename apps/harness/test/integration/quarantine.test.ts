// `kubelet-harness run` as a user runs it, on the fake runtime with a scenario that fails: while a
// kh.config.json quarantine entry holds the cell, the run reports the failure and exits 0; once the
// entry expired, the same failure fails the run (exit 1) and the entry is named.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeLeftovers } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/node/project.js';

const cli = join(projectRoot(), 'apps/harness/dist/cli.js');
let dir: string;
const runIds: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-quarantine-run-'));
  await writeFile(
    join(dir, 'suite.mjs'),
    `export const scenarios = [
  { name: 'steady', description: 'passes', isolation: 'namespace', run: async (ctx) => ctx.check.ok('fine', true) },
  { name: 'known-bad', description: 'fails', isolation: 'namespace', run: async (ctx) => ctx.check.ok('broken', false, 'seen', 'wanted') },
];
`,
  );
});
afterAll(async () => {
  for (const runId of runIds) await removeLeftovers({ runId });
  await rm(dir, { recursive: true, force: true });
}, 60_000);

async function run(name: string, expires: string) {
  const config = join(dir, `${name}.json`);
  await writeFile(
    config,
    JSON.stringify({
      quarantine: [{ cell: 'fake/known-bad', owner: 'sig-node', expires, reason: 'known and owned' }],
    }),
  );
  const out = join(dir, name);
  const child = spawn(
    process.execPath,
    [cli, 'run', '-r', 'fake', '--suite', join(dir, 'suite.mjs'), '-o', out],
    {
      env: { ...process.env, KH_CONFIG: config, KH_STATE_DIR: join(dir, 'ledger'), KH_RUN_ID: '' },
      stdio: 'pipe',
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const runId = /run (\w+):/.exec(stderr)?.[1];
  if (runId) runIds.push(runId);
  const results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8'));
  return { code, stdout, stderr, results };
}

describe('kubelet-harness run with a quarantined cell', () => {
  it('exits 0 while the quarantine holds the failure, and 1 once it expired', async () => {
    const held = await run('held', '2999-12-31');
    expect(held.code, held.stderr).toBe(0);
    expect(
      held.results.cells.map((c: { scenario: string; outcome: string }) => `${c.scenario}:${c.outcome}`),
    ).toEqual(['steady:passed', 'known-bad:failed']);
    expect(held.results.cells[1].quarantine).toEqual({
      owner: 'sig-node',
      expires: '2999-12-31',
      reason: 'known and owned',
    });
    expect(held.stdout).toMatch(/known-bad\s+FAIL\*/);
    expect(held.stderr).toMatch(/1 passed, 0 failed, 0 skipped, 1 quarantined in/);

    const expired = await run('expired', '2020-01-01');
    expect(expired.code, expired.stderr).toBe(1);
    expect(expired.results.cells[1].quarantine).toBeUndefined();
    expect(expired.stderr).toContain(
      'quarantine of fake/known-bad (sig-node) expired on 2020-01-01: fake/known-bad fail the run again',
    );
    expect(expired.stderr).toMatch(/1 passed, 1 failed, 0 skipped in/);
  }, 240_000);
});
