// What a run will do before anything starts: which runtime × scenario cells run (a shard may pick
// some), which a backend cannot run by what it declares, and how many nodes each runtime gets.
import { missingNeeds } from '../backends/started-node.js';
import type { RuntimeBackend } from '../backends/types.js';
import type { Scenario } from '../framework/scenario.js';
import type { ReadyNode } from '../world/types.js';
import { lanesWithOwnDisk, type PlannedCell } from './schedule.js';
import { UNKNOWN_SCENARIO_MS } from './shard.js';

export interface MatrixPlan {
  /** The runtimes with at least one cell in this run; the others are not started. */
  backends: RuntimeBackend[];
  scenarios: Scenario[];
  /** The cells each runtime will schedule; cells its node turns out to lack are taken out. */
  planned: Map<string, PlannedCell[]>;
  /** Nodes per runtime. */
  lanes: Map<string, number>;
  /** How many of them, the last ones, have a disk of their own (for Scenario.ownDisk cells). */
  ownDiskLanes: Map<string, number>;
  /** A runtime's scenarios in this run, in suite order. */
  scenariosOf(runtime: string): Scenario[];
  /** What `backend` (or its started `node`) lacks for `scenario`; empty when it can run it. */
  missingFor(backend: RuntimeBackend, scenario: Scenario, node?: ReadyNode): string[];
}

export interface PlanOptions {
  /** Only these cells (`runtime/scenario`); absent: every runtime × scenario. */
  cells?: ReadonlySet<string>;
  /** Expected duration by `runtime/scenario`. */
  estimates?: ReadonlyMap<string, number>;
  nodesPerRuntime?: number;
}

export function planMatrix(
  allBackends: readonly RuntimeBackend[],
  scenarios: Scenario[],
  opts: PlanOptions,
): MatrixPlan {
  const inRun = (runtime: string, scenario: string) => opts.cells?.has(`${runtime}/${scenario}`) ?? true;
  const backends = allBackends.filter((b) => scenarios.some((s) => inRun(b.name, s.name)));
  const scenariosOf = (runtime: string) => scenarios.filter((s) => inRun(runtime, s.name));
  const missingFor = (b: RuntimeBackend, s: Scenario, node?: ReadyNode) => missingNeeds(b, s, node?.started);
  const planned = new Map(
    backends.map((b) => [
      b.name,
      scenariosOf(b.name)
        .filter((s) => missingFor(b, s).length === 0)
        .map((s) => plannedCell(b, s, opts.estimates)),
    ]),
  );
  const lanes = new Map<string, number>();
  const ownDiskLanes = new Map<string, number>();
  for (const b of backends) {
    const want = lanesWithOwnDisk(planned.get(b.name)!, opts.nodesPerRuntime ?? 1);
    // A backend's cap keeps the plain nodes first: ownDisk cells can run on those, not the reverse.
    const cap = b.maxNodes ?? Number.POSITIVE_INFINITY;
    const plain = Math.min(cap, want.plain);
    const ownDisk = Math.min(cap - plain, want.ownDisk);
    lanes.set(b.name, plain + ownDisk);
    ownDiskLanes.set(b.name, ownDisk);
  }
  return { backends, scenarios, planned, lanes, ownDiskLanes, scenariosOf, missingFor };
}

function plannedCell(
  backend: RuntimeBackend,
  scenario: Scenario,
  estimates: ReadonlyMap<string, number> | undefined,
): PlannedCell {
  return {
    runtime: backend.name,
    scenario: scenario.name,
    isolation: scenario.isolation ?? 'node',
    exclusive: scenario.exclusive ?? [],
    ...(scenario.shared?.length ? { shared: scenario.shared } : {}),
    ...(scenario.ownDisk ? { ownDisk: true } : {}),
    estimateMs:
      estimates?.get(`${backend.name}/${scenario.name}`) ?? scenario.estimateMs ?? UNKNOWN_SCENARIO_MS,
    heavy: scenario.load === 'heavy',
  };
}

/** Takes `scenario` out of `runtime`'s plan: its started node lacks what the scenario needs. */
export function unplan(plan: MatrixPlan, runtime: string, scenario: string): void {
  plan.planned.set(
    runtime,
    plan.planned.get(runtime)!.filter((c) => c.scenario !== scenario),
  );
}
