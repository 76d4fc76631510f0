// A scenario that cannot make one of its checks on a backend must skip there with the reason,
// never pass without the check: the audit found status-reporting passing on a backend that
// skipped its runtime-down step. These run the real runner on a stub node, no containers.
import { readdirSync, readFileSync } from 'node:fs';
import { consoleProgress, type ReadyNode, type RuntimeBackend, runMatrix, type World } from '@kh/harness';
import { describe, expect, it } from 'vitest';
import { scenarios } from '../src/index.js';
import { statusReporting } from '../src/scenarios/status-reporting.js';

const quiet = consoleProgress(() => {});

/**
 * A node whose backend has only `capabilities` (and a runtime restart when `restart`); running a
 * scenario on it would fail loudly.
 */
function stubMatrix(capabilities: RuntimeBackend['capabilities'], restart: boolean) {
  const backend: RuntimeBackend = {
    name: 'bare',
    description: 'a backend without capabilities',
    capabilities,
    start: () => Promise.reject(new Error('not started in this test')),
  };
  const unreachable = () => Promise.reject(new Error('the scenario ran'));
  const world: World = {
    runId: 'needs-test',
    openCell: unreachable,
    createNamespace: unreachable,
    deleteNamespace: () => Promise.resolve(),
    stop: () => Promise.resolve(),
  };
  const node = {
    backend,
    started: {
      nodeName: 'bare-node',
      runtimeName: 'bare',
      runtimeVersion: '0',
      warnings: [],
      runtimeLogs: async () => [],
      ...(restart ? { restart: {} } : {}),
    },
    startupMs: 0,
    agentLogs: () => [],
    agentCriCalls: async () => [],
    gone: async () => undefined,
    stop: () => Promise.resolve(),
  } as unknown as ReadyNode;
  return runMatrix({
    runId: 'needs-test',
    backends: [backend],
    scenarios: [statusReporting],
    startWorld: async () => world,
    startNode: async () => node,
    progress: quiet,
  });
}

describe('capabilities a scenario cannot do without', () => {
  it('status-reporting skips, with the reason, on a backend that cannot stop its runtime', async () => {
    const results = await stubMatrix(new Set(['real-containers']), false);
    expect(results.cells).toHaveLength(1);
    expect(results.cells[0]).toMatchObject({
      scenario: 'status-reporting',
      outcome: 'skipped',
      reason: 'backend bare lacks runtime-restart',
    });
  });

  it('status-reporting runs (here: fails on the stub world) when the backend can', async () => {
    const results = await stubMatrix(new Set(), true);
    expect(results.cells[0]?.outcome).toBe('failed');
  });

  it('every scenario states how long it takes, which orders and shards the matrix', () => {
    expect(scenarios.filter((s) => !(s.estimateMs && s.estimateMs > 0)).map((s) => s.name)).toEqual([]);
  });

  it('no scenario branches on a capability: each one it needs is in `needs`', () => {
    const dir = new URL('../src/scenarios/', import.meta.url);
    const branching = readdirSync(dir).filter((f) =>
      /capabilities\s*\.\s*has\s*\(/.test(readFileSync(new URL(f, dir), 'utf8')),
    );
    expect(branching).toEqual([]);
  });
});
