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
  test("registers a crun and a gVisor column per release after the built-ins, the default release's under the short names", async () => {
    // cwd without a kh.config.json, env without KH_BACKENDS: only --backend names the module.
    const registry = await loadBackends({ modules: [MODULE], env: {}, cwd: dir });
    const ours = registry.registered.filter((e) => e.module === MODULE).map((e) => e.backend);
    expect(ours.map((b) => b.name)).toEqual([
      'containerd-2.1-crun',
      'containerd-1.7-crun',
      'containerd-1.6-crun',
      'containerd-2.1-gvisor',
      'containerd-1.7-gvisor',
      'containerd-1.6-gvisor',
    ]);
    expect(ours.filter((b) => b.aliases?.length).map((b) => [b.name, b.aliases])).toEqual([
      ['containerd-1.7-crun', ['containerd-crun']],
      ['containerd-1.7-gvisor', ['containerd-gvisor']],
    ]);
  });

  test('runs node-registration and pod-lifecycle end to end on containerd-crun (the default release)', async () => {
    const registry = await loadBackends({ modules: [MODULE], env: {}, cwd: dir });
    const { results } = await runHarness(
      { runtimes: ['containerd-crun'], scenarios: ['node-registration', 'pod-lifecycle'], outDir: dir },
      scenarios,
      { progress: consoleProgress((l) => console.log(l)) },
      { backends: registry.backends },
    );
    expect(results.runtimes).toMatchObject([{ name: 'containerd-1.7-crun', runtimeName: 'containerd' }]);
    expect(results.cells.map((c) => [c.scenario, c.outcome, c.reason ?? ''])).toEqual([
      ['node-registration', 'passed', ''],
      ['pod-lifecycle', 'passed', ''],
    ]);
  });
});
