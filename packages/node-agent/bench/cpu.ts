// The agent's CPU figures as upstream's density test computes the kubelet's
// (test/e2e_node/resource_collector.go): rates over cAdvisor's housekeeping intervals, and
// percentiles read off the sorted samples the way its GetBasicCPUStats does.

/** The sample at index int(n * q) - 1 of the sorted samples; 0 when there are too few. */
export function resourceCollectorPercentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length * q) - 1] ?? 0;
}
