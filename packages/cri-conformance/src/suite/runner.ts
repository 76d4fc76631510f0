import { CriClient } from '@kh/cri-api';
import {
  CaseContext,
  type ConformanceCase,
  type ConformanceOptions,
  describeError,
  Skip,
} from '../framework/framework.js';
import { ALL_CASES } from './cases.js';

export type CaseStatus = 'passed' | 'failed' | 'skipped';

export interface CaseResult {
  group: string;
  name: string;
  status: CaseStatus;
  durationMs: number;
  /** Why it failed or was skipped. */
  message?: string;
}

export interface SuiteResult {
  endpoint: string;
  runtime: { name: string; version: string; apiVersion: string };
  startedAt: string;
  durationMs: number;
  totals: Record<CaseStatus, number>;
  cases: CaseResult[];
}

export interface RunOptions {
  progress?: (line: string) => void;
  cases?: readonly ConformanceCase[];
}

/** Makes sure the suite's images are there, pulling what is missing; a clear error otherwise. */
async function ensureImages(client: CriClient, options: ConformanceOptions): Promise<void> {
  for (const ref of new Set(Object.values(options.images))) {
    if ((await client.imageStatus({ image: { image: ref } })).image) continue;
    try {
      await client.pullImage({ image: { image: ref } });
    } catch (err) {
      throw new Error(`test image ${ref} is not in the runtime and cannot be pulled: ${describeError(err)}`);
    }
  }
}

const MARK: Record<CaseStatus, string> = { passed: '✓', failed: '✗', skipped: '-' };

/** Runs the cases against one CRI endpoint, each isolated: what a case creates is removed when it ends. */
export async function runConformance(
  options: ConformanceOptions,
  run: RunOptions = {},
): Promise<SuiteResult> {
  const progress = run.progress ?? (() => undefined);
  const started = Date.now();
  const unreachable = (err: unknown) => {
    throw new Error(`cannot talk CRI to ${options.endpoint}: ${describeError(err)}`);
  };
  const client = await CriClient.connect(options.endpoint, {
    timeoutMs: options.callTimeoutMs,
    connectTimeoutMs: 5_000,
  }).catch(unreachable);
  try {
    const v = await client.version({ version: '0.1.0' }).catch(unreachable);
    progress(`cri-conformance: ${v.runtimeName} ${v.runtimeVersion} at ${options.endpoint}`);
    await ensureImages(client, options);
    const selected = (run.cases ?? ALL_CASES).filter(
      (c) => !options.focus || options.focus.test(`${c.group} ${c.name}`),
    );
    const cases: CaseResult[] = [];
    for (const c of selected) {
      const ctx = new CaseContext(client, options, c.name);
      const t0 = Date.now();
      let result: CaseResult;
      try {
        await c.run(ctx);
        result = { group: c.group, name: c.name, status: 'passed', durationMs: 0 };
      } catch (err) {
        result =
          err instanceof Skip
            ? { group: c.group, name: c.name, status: 'skipped', durationMs: 0, message: err.message }
            : { group: c.group, name: c.name, status: 'failed', durationMs: 0, message: describeError(err) };
      } finally {
        await ctx.cleanup();
      }
      result.durationMs = Date.now() - t0;
      cases.push(result);
      progress(
        `  ${MARK[result.status]} ${c.group} › ${c.name} (${result.durationMs} ms)${result.message ? `\n      ${result.message}` : ''}`,
      );
    }
    const totals: Record<CaseStatus, number> = { passed: 0, failed: 0, skipped: 0 };
    for (const r of cases) totals[r.status]++;
    return {
      endpoint: options.endpoint,
      runtime: { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion },
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      totals,
      cases,
    };
  } finally {
    client.close();
  }
}
