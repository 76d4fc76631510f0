// What a contributor does to add a runtime: write this package, name it to the harness, run. The
// harness is used as a user would (its public exports, the module loaded by name); no core file
// knows this package.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scenarios } from '@kh/e2e';
import { consoleProgress, loadBackends, runHarness } from '@kh/harness';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const MODULE = '@kh/backend-containerd-handlers';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-contributor-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a backend package loaded by module name', () => {
  test('registers containerd-crun and containerd-gvisor after the built-ins', async () => {
    // cwd without a kh.config.json, env without KH_BACKENDS: only --backend names the module.
    const registry = await loadBackends({ modules: [MODULE], env: {}, cwd: dir });
    expect(registry.registered.filter((e) => e.module === MODULE).map((e) => e.backend.name)).toEqual([
      'containerd-crun',
      'containerd-gvisor',
    ]);
  });

  test('runs node-registration and pod-lifecycle end to end on containerd-crun', async () => {
    const registry = await loadBackends({ modules: [MODULE], env: {}, cwd: dir });
    const { results } = await runHarness(
      { runtimes: ['containerd-crun'], scenarios: ['node-registration', 'pod-lifecycle'], outDir: dir },
      scenarios,
      { progress: consoleProgress((l) => console.log(l)) },
      { backends: registry.backends },
    );
    expect(results.runtimes).toMatchObject([{ name: 'containerd-crun', runtimeName: 'containerd' }]);
    expect(results.cells.map((c) => [c.scenario, c.outcome, c.reason ?? ''])).toEqual([
      ['node-registration', 'passed', ''],
      ['pod-lifecycle', 'passed', ''],
    ]);
  });
});
