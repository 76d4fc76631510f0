import type { RunResults } from '@kh/harness';

/**
 * Issue 35's methods: the CRI calls a pod lifecycle never makes, each with the scenarios whose pass
 * means the agent made it (an empty list: every agent start makes it). A passed cell whose
 * runtime's contract row still says "not called" is an agent that skipped the kubelet's call.
 * Scenarios by name (support/ must not import scenarios/); the test checks each name exists.
 */
export const CONTRACT_DRIVERS: Readonly<Record<string, readonly string[]>> = {
  RuntimeConfig: [],
  UpdateRuntimeConfig: [],
  ReopenContainerLog: ['log-rotation'],
  UpdateContainerResources: ['pod-resize', 'cri-surface'],
  PodSandboxStats: ['cri-surface'],
  ListPodSandboxStats: ['cri-surface'],
  CheckpointContainer: ['cri-surface'],
};

/**
 * The methods of CONTRACT_DRIVERS that a passed cell of `runtime` should have made and its
 * contract table shows as not called, each with the cell that should have made it.
 */
export function contractGaps(results: RunResults, runtime: string): string[] {
  const passed = results.cells.filter((c) => c.runtime === runtime && c.outcome === 'passed');
  const contract = results.runtimes.find((r) => r.name === runtime)?.criContract ?? [];
  const gaps: string[] = [];
  for (const [method, drivers] of Object.entries(CONTRACT_DRIVERS)) {
    const cell = passed.find((c) => drivers.length === 0 || drivers.includes(c.scenario));
    if (!cell) continue;
    const row = contract.find((r) => r.method === method);
    if (!row || row.status === 'not-called')
      gaps.push(`${method}: not called, though ${cell.scenario} passed`);
  }
  return gaps;
}
