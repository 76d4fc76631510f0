// What cells and the run cost in CPU-seconds (issue 32), from the kernel's accounting: each node
// container's cgroup, the world's containers, this process and the host's /proc/stat.

import { type HostCpu, hostCpu, roundSeconds } from '../node/cpu.js';
import type { CellCpu, CellResult, ContainerCpu, RunCpu } from '../results/model.js';
import { errorMessage } from '../support/errors.js';
import type { ReadyNode, World } from '../world/types.js';

/**
 * Reads the node's and the host's counters now; the function it returns reads them again and gives
 * the cell's use in between. A node whose cgroup cannot be read gets a note and no nodeSeconds.
 */
export async function startCellCpu(
  node: ReadyNode,
  note: (summary: string) => void,
): Promise<() => Promise<CellCpu>> {
  let noted = false;
  const nodeCpu = () =>
    nodeSeconds(node).catch((err) => {
      if (!noted) note(`node CPU not read: ${errorMessage(err)}`);
      noted = true;
      return undefined;
    });
  const read = () => Promise.all([nodeCpu(), hostCpu()]);
  const [node0, host0] = await read();
  return async () => {
    const [node1, host1] = await read();
    return {
      ...(node0 !== undefined && node1 !== undefined ? { nodeSeconds: roundSeconds(node1 - node0) } : {}),
      ...(host0 && host1 ? { hostSeconds: roundSeconds(host1.busy - host0.busy) } : {}),
    };
  };
}

/** The node's counter; undefined for a node that is not a container. Never throws: it rejects. */
const nodeSeconds = async (node: ReadyNode): Promise<number | undefined> => node.started.host.cpuSeconds?.();

/** Each cell's nodeSharedWith: the cells whose time on the same node overlapped its own. */
export function withNodeSharing(cells: readonly CellResult[]): CellResult[] {
  const span = (c: CellResult) => {
    const start = Date.parse(c.startedAt);
    return [start, start + c.durationMs] as const;
  };
  return cells.map((c) => {
    if (!c.cpu || !c.node) return c;
    const [start, end] = span(c);
    const sharedWith = cells
      .filter((o) => o !== c && o.node === c.node && o.durationMs > 0)
      .filter((o) => {
        const [oStart, oEnd] = span(o);
        return oStart < end && start < oEnd;
      })
      .map((o) => `${o.runtime}/${o.scenario}`);
    return sharedWith.length > 0 ? { ...c, cpu: { ...c.cpu, nodeSharedWith: sharedWith } } : c;
  });
}

/**
 * The run's CPU-seconds at its end, before anything is stopped: each node container and the
 * world's from their start, this process's, and the host's since `hostAtStart`.
 */
export async function runCpu(
  nodes: readonly ReadyNode[],
  world: World | undefined,
  hostAtStart: HostCpu | undefined,
  warn: (message: string) => void,
): Promise<RunCpu> {
  const read = async (what: string, seconds: () => Promise<number | ContainerCpu[] | undefined>) =>
    seconds().catch((err) => {
      warn(`CPU of ${what} not read: ${errorMessage(err)}`);
      return undefined;
    });
  const nodeCpu = await Promise.all(
    nodes.map(async (n): Promise<ContainerCpu[]> => {
      const seconds = await read(n.started.nodeName, () => nodeSeconds(n));
      return typeof seconds === 'number'
        ? [{ name: n.started.nodeName, runtime: n.backend.name, seconds: roundSeconds(seconds) }]
        : [];
    }),
  );
  const worldCpu = world?.cpuUse
    ? ((await read('the world', () => world.cpuUse!())) as ContainerCpu[] | undefined)
    : [];
  const { user, system } = process.cpuUsage();
  const harnessSeconds = roundSeconds((user + system) / 1e6);
  const hostNow = await hostCpu();
  const all = [...nodeCpu.flat(), ...(worldCpu ?? [])];
  return {
    nodes: nodeCpu.flat(),
    world: worldCpu ?? [],
    harnessSeconds,
    totalSeconds: roundSeconds(all.reduce((sum, c) => sum + c.seconds, harnessSeconds)),
    ...(hostAtStart && hostNow ? { hostSeconds: roundSeconds(hostNow.busy - hostAtStart.busy) } : {}),
  };
}
