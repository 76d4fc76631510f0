import { describe, expect, it } from 'vitest';
import { CRITEST_TARGET_RATIO, critestVerdict, floorOf } from '../bench/verdict.js';

// A floor far below containerd's figure: explains nothing.
const noFloor = floorOf({ floor: 0.5, containerd: 1, shim: 2 });

describe('critest -benchmark verdicts', () => {
  it('derives both ratios of a floor from the p50s', () => {
    expect(floorOf({ floor: 1.4, containerd: 0.7, shim: 1.75 })).toEqual({
      overContainerd: 2,
      shimOverFloor: 1.25,
    });
  });

  it('is met within the target, whatever the floors say', () => {
    const floor = floorOf({ floor: 2, containerd: 1, shim: 1.5 });
    expect(critestVerdict(1.5, { docker: floor, grpc: floor })).toBe('met');
    expect(CRITEST_TARGET_RATIO).toBe(1.5);
  });

  it('blames the gRPC floor only when the no-op server misses and the shim is near it', () => {
    // The no-op server at 2.2x containerd, the shim 1.2x the no-op server.
    const grpc = floorOf({ floor: 1.54, containerd: 0.7, shim: 1.85 });
    expect(critestVerdict(2.6, { docker: noFloor, grpc })).toBe('missed: grpc floor');
    // The no-op server within the target: the rest is the shim's own.
    const cheapNoop = floorOf({ floor: 1.0, containerd: 0.7, shim: 1.85 });
    expect(cheapNoop.overContainerd).toBeLessThanOrEqual(CRITEST_TARGET_RATIO);
    expect(critestVerdict(2.6, { docker: noFloor, grpc: cheapNoop })).toBe('missed');
    // The no-op server misses, but the shim is far above it.
    const farAbove = floorOf({ floor: 1.2, containerd: 0.7, shim: 1.85 });
    expect(farAbove.shimOverFloor).toBeGreaterThan(CRITEST_TARGET_RATIO);
    expect(critestVerdict(2.6, { docker: noFloor, grpc: farAbove })).toBe('missed');
    // No gRPC floor measured (other operations, or --grpc-floor-calls 0).
    expect(critestVerdict(2.6, { docker: noFloor })).toBe('missed');
  });

  it('blames Docker the same way, and first', () => {
    const docker = floorOf({ floor: 9.6, containerd: 3.6, shim: 11 });
    expect(critestVerdict(3.07, { docker })).toBe('missed: docker floor');
    const grpc = floorOf({ floor: 2, containerd: 1, shim: 2.5 });
    expect(critestVerdict(3.07, { docker, grpc })).toBe('missed: docker floor');
    const shimFarAbove = floorOf({ floor: 5, containerd: 3, shim: 11 });
    expect(critestVerdict(3.67, { docker: shimFarAbove })).toBe('missed');
  });

  it('counts exactly 1.5x as within the target on both sides of a floor', () => {
    const atLine = floorOf({ floor: 1.5, containerd: 1, shim: 2.25 });
    expect(atLine).toEqual({ overContainerd: 1.5, shimOverFloor: 1.5 });
    // The floor at exactly the target does not miss it: the miss is the shim's.
    expect(critestVerdict(2.25, { docker: noFloor, grpc: atLine })).toBe('missed');
    const shimAtLine = floorOf({ floor: 1.6, containerd: 1, shim: 2.4 });
    expect(critestVerdict(2.4, { docker: noFloor, grpc: shimAtLine })).toBe('missed: grpc floor');
  });
});
