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
export function expectCase(result: SuiteResult | undefined, name: string, e: Expectations): void {
  const r = result?.cases.find((c) => c.name === name);
  const skip = e.skips?.[name];
  const failure = e.failures?.[name];
  if (skip && r?.status === 'skipped') expect(r.message).toMatch(skip);
  else if (failure)
    expect(r, r?.message).toMatchObject({ status: 'failed', message: expect.stringMatching(failure) });
  else expect(r, r?.message).toMatchObject({ status: 'passed' });
}
