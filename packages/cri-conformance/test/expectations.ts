import { expect } from 'vitest';
import { ALL_CASES, type SuiteResult } from '../src/index.js';

/** Per case name: a skip allowed with a reason matching the RegExp, or a failure pinned with its message. */
export interface Expectations {
  skips?: Record<string, RegExp>;
  failures?: Record<string, RegExp>;
}

/** `[group › name, name]` for it.each over every case of the suite. */
export const EVERY_CASE = ALL_CASES.map((c) => [`${c.group} › ${c.name}`, c.name] as const);

/** A case passed, or skipped / failed exactly as pinned: a new failure and a fixed one both show. */
export function expectCase(result: SuiteResult, name: string, e: Expectations): void {
  const r = result.cases.find((c) => c.name === name);
  const skip = e.skips?.[name];
  const failure = e.failures?.[name];
  if (skip && r?.status === 'skipped') expect(r.message).toMatch(skip);
  else if (failure)
    expect(r, r?.message).toMatchObject({ status: 'failed', message: expect.stringMatching(failure) });
  else expect(r, r?.message).toMatchObject({ status: 'passed' });
}

/** ConformanceOptions.streamingUnreachable for a runtime in a node container. */
export const NODE_STREAMING_UNREACHABLE =
  "the runtime serves streaming on the node container's loopback, which the suite on the host cannot reach";

const inGroup = (group: string, reason: RegExp) =>
  ALL_CASES.filter((c) => c.group === group).map((c) => [c.name, reason] as const);

/**
 * In a node container the runtime cannot see the shared mount the suite makes on the host (the node's
 * bind of the shared directory is private), so it refuses rslave/rshared mounts and the cases skip;
 * the streaming cases skip with NODE_STREAMING_UNREACHABLE.
 */
export const NODE_CONTAINER_SKIPS: Record<string, RegExp> = Object.fromEntries([
  ...inGroup('mount propagation', /does not hold .* on a shared mount/),
  ...inGroup('streaming', /serves streaming on the node container's loopback/),
]);

/**
 * Docker 20.10 knows no CAP_PERFMON, CAP_BPF or CAP_CHECKPOINT_RESTORE ("invalid CapAdd: unknown
 * capability"), so no container it starts has them, even privileged, on a host that has them.
 */
export const DOCKER_20_10_ON_HOST_FAILURES: Record<string, RegExp> = {
  'Privileged gets the bounding set of the runtime host':
    /lacks CAP_PERFMON, CAP_BPF, CAP_CHECKPOINT_RESTORE of/,
  'adding ALL capabilities gives the bounding set of the runtime host':
    /lacks CAP_PERFMON, CAP_BPF, CAP_CHECKPOINT_RESTORE of/,
};
