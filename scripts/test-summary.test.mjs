// scripts/test-summary.mjs on a small workspace tree.
//   node --test scripts/test-summary.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'test-summary.mjs');
const root = mkdtempSync(join(tmpdir(), 'kh-test-summary-'));
after(() => rmSync(root, { recursive: true, force: true }));

function pkg(name, report) {
  const dir = join(root, 'packages', name);
  mkdirSync(join(dir, '.reports'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `@t/${name}`, scripts: { test: 'x' } }));
  if (report) writeFileSync(join(dir, '.reports', 'vitest.json'), JSON.stringify(report(dir)));
}
writeFileSync(join(root, 'package.json'), JSON.stringify({ workspaces: ['packages/*'] }));
pkg('green', () => ({ numPassedTests: 3, numFailedTests: 0, numPendingTests: 1, testResults: [] }));
pkg('red', (dir) => ({
  numPassedTests: 1,
  numFailedTests: 2,
  testResults: [
    {
      name: join(dir, 'test/a.test.ts'),
      status: 'failed',
      assertionResults: [
        { fullName: 'a works', status: 'passed' },
        {
          fullName: 'a fails',
          status: 'failed',
          failureMessages: ['\u001b[31mAssertionError\u001b[39m: expected 1 to be 2\n    at stack'],
        },
        {
          fullName: 'a says why below',
          status: 'failed',
          // A custom message that starts with a newline (a command's output), longer than eight lines.
          failureMessages: [
            `AssertionError: \n${Array.from({ length: 9 }, (_, i) => `out ${i + 1}`).join('\n')}\n\n: expected 1 to be 0\n    at stack\n    at more`,
          ],
        },
      ],
    },
    {
      name: join(dir, 'test/b.test.ts'),
      status: 'failed',
      message: 'Cannot find module x',
      assertionResults: [],
    },
  ],
}));
pkg('silent');
pkg('unhandled', () => ({ numPassedTests: 2, numFailedTests: 0, success: false, testResults: [] }));

it('counts every package, names each failure with its message up to eight lines before the stack, and counts a missing report or an unhandled error as a failure', () => {
  const r = spawnSync(process.execPath, [SCRIPT, 'test=vitest.json'], {
    env: { ...process.env, KH_REPO_ROOT: root },
    encoding: 'utf8',
  });
  assert.equal(r.status, 1);
  const lines = r.stdout.trimEnd().split('\n');
  assert.deepEqual(lines, [
    '  @t/green test: 3 passed, 0 failed, 1 skipped',
    '  @t/red test: 1 passed, 3 failed, 0 skipped',
    '    ✗ test/a.test.ts > a fails: AssertionError: expected 1 to be 2',
    '    ✗ test/a.test.ts > a says why below: AssertionError:',
    ...[1, 2, 3, 4, 5, 6, 7].map((i) => `        out ${i}`),
    '        … 3 more line(s)',
    '    ✗ test/b.test.ts: Cannot find module x',
    '  @t/silent: no vitest.json (the test task failed before reporting)',
    '  @t/unhandled test: 2 passed, 1 failed, 0 skipped',
    '    ✗ an error outside any test (unhandled error or rejection; see the log)',
    '6 passed, 5 failed, 1 skipped',
  ]);
});

it('counts each failed check named in --checks as a failure, and a missing checks file as none', () => {
  const checks = join(root, 'failed-checks.txt');
  writeFileSync(checks, 'lint (npx biome ci .)\n\ntypecheck (npx turbo run typecheck)\n');
  const run = (file) =>
    spawnSync(process.execPath, [SCRIPT, '--checks', file, 'test=vitest.json'], {
      env: { ...process.env, KH_REPO_ROOT: root },
      encoding: 'utf8',
    })
      .stdout.trimEnd()
      .split('\n');
  const lines = run(checks);
  assert.deepEqual(lines.slice(-3), [
    '  ✗ check failed: lint (npx biome ci .)',
    '  ✗ check failed: typecheck (npx turbo run typecheck)',
    '6 passed, 7 failed, 1 skipped',
  ]);
  assert.equal(run(join(root, 'absent.txt')).at(-1), '6 passed, 5 failed, 1 skipped');
});

it('counts a failure held by a quarantine (skipped, meta.quarantined) as quarantined, not skipped, and names it', () => {
  const tree = mkdtempSync(join(tmpdir(), 'kh-test-summary-q-'));
  try {
    writeFileSync(join(tree, 'package.json'), JSON.stringify({ workspaces: ['e2e'] }));
    mkdirSync(join(tree, 'e2e', '.reports'), { recursive: true });
    writeFileSync(
      join(tree, 'e2e', 'package.json'),
      JSON.stringify({ name: '@t/e2e', scripts: { 'test:e2e': 'x' } }),
    );
    const held = {
      reason: 'kubectl logs --previous: 400',
      entry: { owner: 'sig-node', expires: '2026-12-31', reason: 'x' },
    };
    writeFileSync(
      join(tree, 'e2e', '.reports', 'vitest-e2e.json'),
      JSON.stringify({
        numPassedTests: 1,
        numFailedTests: 1,
        numPendingTests: 2,
        testResults: [
          {
            name: join(tree, 'e2e', 'test/matrix.e2e.test.ts'),
            status: 'failed',
            assertionResults: [
              { fullName: 'docker node-registration', status: 'passed' },
              { fullName: 'docker probes', status: 'failed', failureMessages: ['probes failed'] },
              { fullName: 'fake kubectl', status: 'skipped' },
              { fullName: 'docker kubectl', status: 'skipped', meta: { quarantined: held } },
            ],
          },
        ],
      }),
    );
    const r = spawnSync(process.execPath, [SCRIPT, 'test:e2e=vitest-e2e.json'], {
      env: { ...process.env, KH_REPO_ROOT: tree },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.deepEqual(r.stdout.trimEnd().split('\n'), [
      '  @t/e2e test:e2e: 1 passed, 1 failed, 1 skipped, 1 quarantined',
      '    ✗ test/matrix.e2e.test.ts > docker probes: probes failed',
      '    ~ test/matrix.e2e.test.ts > docker kubectl: quarantined until 2026-12-31 (sig-node): kubectl logs --previous: 400',
      '1 passed, 1 failed, 1 skipped, 1 quarantined',
    ]);
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
});
