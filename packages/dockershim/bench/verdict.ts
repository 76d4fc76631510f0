// The verdicts of critest -benchmark's operations (issue 32): the shim's p50 within this factor of
// containerd's, or missed with the floor that explains it.

/** critest -benchmark: every operation within this factor of containerd's p50. */
export const CRITEST_TARGET_RATIO = 1.5;

export type Verdict = 'met' | 'missed: docker floor' | 'missed: grpc floor' | 'missed';

/** A floor measured in the same run: its p50 over containerd's, and the shim's p50 over its own. */
export interface Floor {
  overContainerd: number;
  shimOverFloor: number;
}

/** a / b to three decimals, as the bench JSON gives its ratios. */
export const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;

/** A floor's two ratios from the floor's, containerd's and the shim's p50. */
export function floorOf(p50: { floor: number; containerd: number; shim: number }): Floor {
  return { overContainerd: ratio(p50.floor, p50.containerd), shimOverFloor: ratio(p50.shim, p50.floor) };
}

/**
 * A floor explains a miss when it alone is above the target and the shim is within the target's
 * factor of it: a shim far above its floor misses on its own.
 */
const explains = (floor: Floor | undefined, target: number) =>
  floor !== undefined && floor.overContainerd > target && floor.shimOverFloor <= target;

/**
 * `shimRatio`: the shim's p50 over containerd's. The docker floor is the Engine calls Docker itself
 * needs (bench/docker_floor.ts); the grpc floor, for ContainerStatus, a no-op server on the shim's
 * gRPC stack (bench/grpc_floor.ts).
 */
export function critestVerdict(
  shimRatio: number,
  floors: { docker: Floor; grpc?: Floor | undefined },
  target = CRITEST_TARGET_RATIO,
): Verdict {
  if (shimRatio <= target) return 'met';
  if (explains(floors.docker, target)) return 'missed: docker floor';
  if (explains(floors.grpc, target)) return 'missed: grpc floor';
  return 'missed';
}
