import { describe, expect, it } from 'vitest';
import { runCpu, startCellCpu, withNodeSharing } from '../../src/run/cpu.js';
import type { World } from '../../src/world/types.js';
import { cell } from '../report/fixtures.js';
import { FAKE_NODE_CPU_STEP, fakeBackend, fakeNode } from './fakes.js';

describe('startCellCpu', () => {
  it("gives the node's CPU-seconds between the cell's start and end", async () => {
    const node = fakeNode(fakeBackend('alpha'), { events: [] });
    const notes: string[] = [];
    const end = await startCellCpu(node, (n) => notes.push(n));
    const cpu = await end();
    expect(cpu.nodeSeconds).toBe(FAKE_NODE_CPU_STEP);
    // This test runs on Linux: the host's busy time over the cell is read from /proc/stat.
    expect(cpu.hostSeconds).toBeGreaterThanOrEqual(0);
    expect(notes).toEqual([]);
  });

  it('notes a node whose cgroup cannot be read, once, and records no nodeSeconds', async () => {
    const node = fakeNode(fakeBackend('alpha'), { events: [] });
    node.started.host.cpuSeconds = async () => {
      throw new Error('container abc is not running');
    };
    const notes: string[] = [];
    const cpu = await (await startCellCpu(node, (n) => notes.push(n)))();
    expect(cpu.nodeSeconds).toBeUndefined();
    expect(notes).toEqual(['node CPU not read: container abc is not running']);
  });
});

describe('withNodeSharing', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, s)).toISOString();
  it('names the cells whose time on the same node overlapped', () => {
    const cpu = { nodeSeconds: 10, hostSeconds: 20 };
    const cells = withNodeSharing([
      cell('alpha', 'a', { node: 'n1', startedAt: at(0), durationMs: 10_000, cpu }),
      cell('alpha', 'b', { node: 'n1', startedAt: at(5), durationMs: 10_000, cpu }),
      // Starts as `a` ends: not beside it.
      cell('alpha', 'c', { node: 'n1', startedAt: at(10), durationMs: 1_000, cpu }),
      cell('alpha', 'd', { node: 'n2', startedAt: at(0), durationMs: 20_000, cpu }),
    ]);
    expect(cells.map((c) => c.cpu?.nodeSharedWith)).toEqual([
      ['alpha/b'],
      ['alpha/a', 'alpha/c'],
      ['alpha/b'],
      undefined,
    ]);
    expect(cells[0]!.cpu).toEqual({ ...cpu, nodeSharedWith: ['alpha/b'] });
  });
});

describe('runCpu', () => {
  it("adds the nodes', the world's and the harness's CPU-seconds", async () => {
    const nodes = [
      fakeNode(fakeBackend('alpha'), { events: [] }),
      fakeNode(fakeBackend('alpha'), { events: [] }, 1),
    ];
    const world = {
      cpuUse: async () => [
        { name: 'apiserver', seconds: 3 },
        { name: 'registry', seconds: 0.5 },
      ],
    } as unknown as World;
    const warnings: string[] = [];
    const cpu = await runCpu(nodes, world, { busy: 0, total: 0 }, (w) => warnings.push(w));
    expect(cpu.nodes).toEqual([
      { name: 'node-alpha', runtime: 'alpha', seconds: FAKE_NODE_CPU_STEP },
      { name: 'node-alpha-2', runtime: 'alpha', seconds: FAKE_NODE_CPU_STEP },
    ]);
    expect(cpu.world.map((c) => c.name)).toEqual(['apiserver', 'registry']);
    expect(cpu.harnessSeconds).toBeGreaterThan(0);
    expect(cpu.totalSeconds).toBeCloseTo(2 * FAKE_NODE_CPU_STEP + 3.5 + cpu.harnessSeconds, 2);
    expect(cpu.hostSeconds).toBeGreaterThan(0);
    expect(warnings).toEqual([]);
  });

  it('notes, never throws, for a node without a host to read (a stub)', async () => {
    const node = fakeNode(fakeBackend('alpha'), { events: [] });
    (node.started as { host?: unknown }).host = undefined;
    const notes: string[] = [];
    const cpu = await (await startCellCpu(node, (n) => notes.push(n)))();
    expect(cpu.nodeSeconds).toBeUndefined();
    expect(notes).toHaveLength(1);
    const warnings: string[] = [];
    expect((await runCpu([node], undefined, undefined, (w) => warnings.push(w))).nodes).toEqual([]);
    expect(warnings).toHaveLength(1);
  });

  it('warns and leaves out what it cannot read', async () => {
    const node = fakeNode(fakeBackend('alpha'), { events: [] });
    node.started.host.cpuSeconds = () => Promise.reject(new Error('gone'));
    const world = { cpuUse: () => Promise.reject(new Error('no engine')) } as unknown as World;
    const warnings: string[] = [];
    const cpu = await runCpu([node], world, undefined, (w) => warnings.push(w));
    expect(cpu.nodes).toEqual([]);
    expect(cpu.world).toEqual([]);
    expect(cpu.totalSeconds).toBe(cpu.harnessSeconds);
    expect(cpu.hostSeconds).toBeUndefined();
    expect(warnings).toEqual(['CPU of node-alpha not read: gone', 'CPU of the world not read: no engine']);
  });
});
