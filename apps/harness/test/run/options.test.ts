import { describe, expect, it } from 'vitest';
import { BACKENDS, selectBackends } from '../../src/backends/registry.js';
import {
  defaultMaxParallelCells,
  parseRunOptions,
  RUN_USAGE,
  selectScenarios,
} from '../../src/run/options.js';
import { DEFAULT_RUN_TIMEOUT_MS, RUN_CLEAN_UP_ALLOWANCE_MS, runDeadlineMs } from '../../src/run/timeout.js';
import { fakeBackend, scenario } from './fakes.js';

describe('parseRunOptions', () => {
  it('reads comma lists, short flags and the output directory', () => {
    expect(parseRunOptions(['--runtime', 'containerd, docker', '-s', 'probes,gc', '-o', 'out'], {})).toEqual({
      runtimes: ['containerd', 'docker'],
      scenarios: ['probes', 'gc'],
      outDir: 'out',
      help: false,
    });
  });

  it('falls back to KH_RUNTIME, KH_SCENARIO and KH_OUT; flags win over the environment', () => {
    const env = { KH_RUNTIME: 'fake', KH_SCENARIO: 'node-registration', KH_OUT: '/tmp/x' };
    expect(parseRunOptions([], env)).toMatchObject({
      runtimes: ['fake'],
      scenarios: ['node-registration'],
      outDir: '/tmp/x',
    });
    expect(parseRunOptions(['-r', 'docker'], env).runtimes).toEqual(['docker']);
  });

  it('means "all" for missing or empty filters', () => {
    expect(parseRunOptions([], { KH_RUNTIME: '' })).toMatchObject({
      runtimes: undefined,
      scenarios: undefined,
    });
    expect(parseRunOptions([], {}).outDir).toBe('.reports/e2e');
  });

  it("collects repeated --backend modules and the endpoint backend's --cri-endpoint", () => {
    expect(
      parseRunOptions(
        ['--backend', '@x/a', '--backend', './b.js', '--cri-endpoint', 'unix:///run/x.sock'],
        {},
      ),
    ).toMatchObject({ backends: ['@x/a', './b.js'], criEndpoint: 'unix:///run/x.sock' });
    expect(parseRunOptions([], {})).not.toHaveProperty('backends');
  });

  it('rejects unknown flags and positionals', () => {
    expect(() => parseRunOptions(['--runtimes', 'x'], {})).toThrow(/Unknown option '--runtimes'/);
    expect(() => parseRunOptions(['containerd'], {})).toThrow(/positional/);
  });
});

describe('selection', () => {
  const suite = [scenario('a', async () => {}), scenario('b', async () => {}), scenario('c', async () => {})];

  it('keeps suite order whatever order the names come in', () => {
    expect(selectScenarios(suite, ['c', 'a']).map((s) => s.name)).toEqual(['a', 'c']);
    expect(selectScenarios(suite, undefined)).toHaveLength(3);
  });

  it('names unknown scenarios and runtimes with the known ones', () => {
    expect(() => selectScenarios(suite, ['a', 'zz'])).toThrow('unknown scenario "zz"; known: a, b, c');
    const registry = [fakeBackend('x'), fakeBackend('y')];
    expect(() => selectBackends(['cri-o'], registry)).toThrow('unknown runtime "cri-o"; known: x, y');
    expect(selectBackends(['y', 'x'], registry).map((b) => b.name)).toEqual(['x', 'y']);
  });

  it("takes a column by its alias, all columns for `all`, and the default release's without names", () => {
    const registry = [
      { ...fakeBackend('rt-2'), release: 'forky' as const },
      { ...fakeBackend('rt-1'), release: 'trixie' as const, aliases: ['rt'] },
      { ...fakeBackend('rt-0'), release: 'bookworm' as const },
      fakeBackend('plain'),
    ];
    expect(selectBackends(['rt'], registry).map((b) => b.name)).toEqual(['rt-1']);
    expect(selectBackends(['rt-0', 'rt'], registry).map((b) => b.name)).toEqual(['rt-1', 'rt-0']);
    expect(selectBackends(['all'], registry)).toHaveLength(4);
    expect(selectBackends(undefined, registry).map((b) => b.name)).toEqual(['rt-1', 'plain']);
    expect(() => selectBackends(['rt-9'], registry)).toThrow(
      'unknown runtime "rt-9"; known: rt-2, rt-1 (rt), rt-0, plain',
    );
  });

  it('registers a containerd and a docker column per node release, fake and endpoint', () => {
    expect(BACKENDS.map((b) => [b.name, b.release ?? '', (b.aliases ?? []).join()])).toEqual([
      ['containerd-2.1', 'forky', ''],
      ['containerd-1.7', 'trixie', 'containerd'],
      ['containerd-1.6', 'bookworm', ''],
      ['docker-28', 'forky', ''],
      ['docker-26', 'trixie', 'docker'],
      ['docker-20.10', 'bookworm', ''],
      ['fake', '', ''],
      ['endpoint', '', ''],
    ]);
    expect(BACKENDS.find((b) => b.name === 'docker-20.10')?.images).toEqual(['node-bookworm']);
    const fake = BACKENDS.find((b) => b.name === 'fake')!;
    expect(fake.capabilities.has('real-containers')).toBe(false);
  });

  it('takes --nodes-per-runtime and --max-parallel-cells (or KH_…), whole numbers of at least 1; absent: the defaults', () => {
    expect(parseRunOptions(['--nodes-per-runtime', '2'], {}).nodesPerRuntime).toBe(2);
    expect(parseRunOptions([], { KH_NODES_PER_RUNTIME: '3' }).nodesPerRuntime).toBe(3);
    expect(parseRunOptions([], { KH_NODES_PER_RUNTIME: '' }).nodesPerRuntime).toBeUndefined();
    for (const bad of ['0', '1.5', 'many'])
      expect(() => parseRunOptions(['--nodes-per-runtime', bad], {}), bad).toThrow(
        `--nodes-per-runtime must be a whole number ≥ 1, got "${bad}"`,
      );
    expect(parseRunOptions(['--max-parallel-cells', '5'], {}).maxParallelCells).toBe(5);
    expect(parseRunOptions([], { KH_MAX_PARALLEL_CELLS: '1' }).maxParallelCells).toBe(1);
    expect(() => parseRunOptions(['--max-parallel-cells', '0'], {})).toThrow(
      '--max-parallel-cells must be a whole number ≥ 1, got "0"',
    );
    expect(defaultMaxParallelCells(2)).toBe(6);
    expect(defaultMaxParallelCells(0)).toBe(2);
    // The endpoint backend runs on the user's one runtime: never more than one node.
    expect(BACKENDS.find((b) => b.name === 'endpoint')?.maxNodes).toBe(1);
  });
  it('takes --timeout (or KH_TIMEOUT) as a Go duration, 0 for none; absent: the default, which outer limits allow for', () => {
    expect(parseRunOptions(['--timeout', '50m'], {}).timeoutMs).toBe(50 * 60_000);
    expect(parseRunOptions([], { KH_TIMEOUT: '1h30m' }).timeoutMs).toBe(90 * 60_000);
    expect(parseRunOptions(['--timeout', '0'], {}).timeoutMs).toBe(0);
    expect(parseRunOptions([], { KH_TIMEOUT: '' }).timeoutMs).toBeUndefined();
    expect(() => parseRunOptions(['--timeout', '50'], {})).toThrow(
      '--timeout: missing unit in duration "50", e.g. "50m" or "1h30m" (0: none)',
    );
    expect(() => parseRunOptions(['--timeout=-5m'], {})).toThrow('--timeout must be between 0 (none) and');
    expect(() => parseRunOptions(['--timeout', '1000h'], {})).toThrow(
      '--timeout must be between 0 (none) and',
    );
    expect(runDeadlineMs()).toBe(DEFAULT_RUN_TIMEOUT_MS + RUN_CLEAN_UP_ALLOWANCE_MS);
    expect(runDeadlineMs(50 * 60_000)).toBe(60 * 60_000);
    // No timeout: the longest a Node timer can wait (a longer one would fire at once).
    expect(runDeadlineMs(0)).toBe(2 ** 31 - 1);
    expect(RUN_USAGE).toContain('--timeout <duration>');
  });

  it('takes --case as a regular expression and --conformance (or KH_CASE, KH_CONFORMANCE); absent: every case', () => {
    expect(parseRunOptions([], {}).cases).toBeUndefined();
    expect(parseRunOptions(['--case', 'liveness.*\\[NodeConformance\\]'], {}).cases?.pattern?.source).toBe(
      'liveness.*\\[NodeConformance\\]',
    );
    expect(parseRunOptions(['--conformance'], {}).cases).toEqual({ conformance: true });
    expect(parseRunOptions([], { KH_CASE: 'exec', KH_CONFORMANCE: '1' }).cases).toEqual({
      pattern: /exec/,
      conformance: true,
    });
    expect(parseRunOptions([], { KH_CASE: '', KH_CONFORMANCE: '' }).cases).toBeUndefined();
    expect(() => parseRunOptions(['--case', '[NodeConformance'], {})).toThrow(
      /^--case is not a regular expression: /,
    );
  });
});
