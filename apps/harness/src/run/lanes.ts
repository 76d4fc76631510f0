// Each runtime's nodes (lanes), started in parallel, and what a node that did not start means for
// its runtime's cells: a backend that cannot run here skips them in its own words, any other
// failure fails them. A started node may still lack what a scenario needs; that cell is skipped.
import { BackendUnavailableError, type RuntimeBackend } from '../backends/types.js';
import type { CellResult, RuntimeInfo } from '../results/model.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import type { ReadyNode, World } from '../world/types.js';
import { failedCell, skippedCell } from './cell.js';
import { type MatrixPlan, unplan } from './plan.js';

/** What a run has recorded so far: the cells that ended and the runtimes it knows. */
export interface MatrixRecord {
  cells: CellResult[];
  runtimes: RuntimeInfo[];
}

/** What a node of the plan must have besides its runtime. */
export interface NodeOptions {
  /** A disk of its own (BackendContext.ownDisk), for Scenario.ownDisk cells. */
  ownDisk?: boolean;
}

export type StartNode<W extends World> = (
  world: W,
  backend: RuntimeBackend,
  progress: Progress,
  index: number,
  opts: NodeOptions,
) => Promise<ReadyNode>;

/** A runtime the run could not ask for its name and version. */
export const unknownRuntime = (name: string): RuntimeInfo => ({
  name,
  runtimeName: name,
  runtimeVersion: 'unknown',
});

/** Every node of `plan`; returns the ready ones by runtime (runtimes without any are left out). */
export async function startLanes<W extends World>(
  world: W,
  plan: MatrixPlan,
  startNode: StartNode<W>,
  progress: Progress,
  record: MatrixRecord,
): Promise<Map<string, ReadyNode[]>> {
  // Nodes come up in parallel: runtime start-up dominates and is mostly waiting.
  const started = await Promise.all(
    plan.backends.map((b) => {
      const child = progress.child(b.name);
      const total = plan.lanes.get(b.name)!;
      const plain = total - (plan.ownDiskLanes.get(b.name) ?? 0);
      return Promise.allSettled(
        Array.from({ length: total }, (_, i) =>
          startNode(world, b, child, i, i >= plain ? { ownDisk: true } : {}),
        ),
      );
    }),
  );
  const nodesOf = new Map<string, ReadyNode[]>();
  for (const [i, settled] of started.entries()) {
    const backend = plan.backends[i]!;
    const ready = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')?.reason;
    const child = progress.child(backend.name);
    if (ready.length > 0) {
      if (failure)
        child.warn(
          `${settled.length - ready.length} of ${settled.length} nodes did not start: ${errorMessage(failure)}`,
        );
      nodesOf.set(backend.name, ready);
      recordStartedRuntime(backend, ready, plan, child, record);
    } else {
      plan.planned.delete(backend.name);
      recordRuntimeWithoutNode(backend, failure, plan, child, record);
    }
  }
  return nodesOf;
}

/** The runtime as its first node reports it; its cells that the node cannot run are skipped. */
function recordStartedRuntime(
  backend: RuntimeBackend,
  ready: ReadyNode[],
  plan: MatrixPlan,
  progress: Progress,
  record: MatrixRecord,
): void {
  const first = ready[0]!;
  record.runtimes.push({
    name: backend.name,
    runtimeName: first.started.runtimeName,
    runtimeVersion: first.started.runtimeVersion,
    ...(first.started.nodeImage ? { nodeImage: first.started.nodeImage } : {}),
    ...(first.started.warnings.length ? { warnings: first.started.warnings } : {}),
    criEndpoint: first.started.hostCriEndpoint,
    startupMs: Math.max(...ready.map((n) => n.startupMs)),
    ...(ready.length > 1 ? { nodes: ready.length } : {}),
  });
  for (const sc of plan.scenariosOf(backend.name)) {
    const missing = plan.missingFor(backend, sc, first);
    if (missing.length === 0) continue;
    const reason = `backend ${backend.name} lacks ${missing.join(', ')}`;
    progress.skip(`${sc.name}: ${reason}`);
    record.cells.push(skippedCell(backend.name, sc.name, reason));
    unplan(plan, backend.name, sc.name);
  }
}

function recordRuntimeWithoutNode(
  backend: RuntimeBackend,
  failure: unknown,
  plan: MatrixPlan,
  progress: Progress,
  record: MatrixRecord,
): void {
  record.runtimes.push(unknownRuntime(backend.name));
  // A runtime that cannot run here at all is skipped with its own words, never passed.
  if (failure instanceof BackendUnavailableError) {
    const reason = `backend ${backend.name} cannot run here: ${failure.message}`;
    progress.skip(reason);
    for (const sc of plan.scenariosOf(backend.name))
      record.cells.push(skippedCell(backend.name, sc.name, reason));
    return;
  }
  const reason = `node did not start: ${errorMessage(failure)}`;
  progress.fail(reason);
  for (const sc of plan.scenariosOf(backend.name))
    record.cells.push(failedCell(backend.name, sc.name, reason));
}
