// Where each benchmark pod's start-up went, stage by stage: the agent's record of each step (its
// GET /debug/startup, the stages the harness reports too) with one stage of the benchmark's own
// after them, `observed`: from the API server accepting the status that completes start-up to the
// benchmark's watch seeing it. Stages add up to the pod's start-up as the benchmark timed it.
import {
  type PodStartupRecord,
  prepareSteps,
  STARTUP_STAGES,
  startupStages,
} from '../src/pods/startup_tracker.js';

export const BENCH_STAGES = [...STARTUP_STAGES, 'observed'] as const;

/**
 * Each named pod's stages (BENCH_STAGES order) and its `prepare` stage's steps (PREPARE_STEPS
 * order), in ms; `createdAt` and `observedAt` are the benchmark's create request and first sight
 * of the pod started (Unix ms). Pods the agent did not record through every step are counted in
 * `incomplete`.
 */
export function podStageRows(
  records: readonly PodStartupRecord[],
  createdAt: ReadonlyMap<string, number>,
  observedAt: ReadonlyMap<string, number>,
): { rows: number[][]; prepareRows: number[][]; incomplete: number } {
  const byName = new Map(records.map((r) => [r.name, r]));
  const rows: number[][] = [];
  const prepareRows: number[][] = [];
  let incomplete = 0;
  for (const [name, created] of createdAt) {
    const r = byName.get(name);
    const stages = r && startupStages(r, created);
    const observed = observedAt.get(name);
    if (!r?.statusWrittenAt || !stages || observed === undefined) {
      incomplete++;
      continue;
    }
    rows.push([...stages.stagesMs, observed - r.statusWrittenAt]);
    const steps = prepareSteps(r);
    if (steps) prepareRows.push(steps);
  }
  return { rows, prepareRows, incomplete };
}
