// `kubelet-harness merge`: the results of `run --shard i/n` jobs (or of runs on several hosts) as
// one run. Cells are taken as they are; what a shard knows of the whole matrix (`shard.matrix`)
// tells which cells no part ran.

import { roundSeconds } from '../node/cpu.js';
import { withCriContract } from './contract.js';
import type { CellResult, CriCallStats, RunCpu, RunResults, RuntimeInfo } from './model.js';
import { RESULTS_SCHEMA_VERSION } from './model.js';
import { withStartupTargets } from './startup.js';

export class MergeError extends Error {
  override name = 'MergeError';
}

export interface MergeOutcome {
  results: RunResults;
  /** Cells more than one part ran (`runtime/scenario`); the first part's cell is kept. */
  duplicates: string[];
  /** Cells of the sharded matrix that no part ran; recorded as failed cells so that JUnit and the report show them. */
  missing: string[];
}

const id = (c: Pick<CellResult, 'runtime' | 'scenario'>) => `${c.runtime}/${c.scenario}`;

/**
 * Merges results files into one. Parts from different commits are refused unless `force`: their
 * cells would not describe one state of the code.
 */
export function mergeResults(parts: readonly RunResults[], opts: { force?: boolean } = {}): MergeOutcome {
  if (parts.length === 0) throw new MergeError('nothing to merge');
  const commits = [...new Set(parts.map((p) => p.commit ?? 'unknown'))];
  if (commits.length > 1 && !opts.force)
    throw new MergeError(
      `the results come from different commits (${parts.map((p) => `${p.runId}: ${p.commit ?? 'unknown'}`).join(', ')}); --force merges them anyway`,
    );

  // The matrix: every shard's declared matrix, then any cell only a part's cells show.
  const matrix: string[] = [];
  const inMatrix = new Set<string>();
  const add = (key: string) => {
    if (!inMatrix.has(key)) {
      inMatrix.add(key);
      matrix.push(key);
    }
  };
  for (const p of parts) for (const key of p.shard?.matrix ?? []) add(key);
  for (const p of parts) for (const c of p.cells) add(id(c));

  const cells = new Map<string, CellResult>();
  const duplicates: string[] = [];
  for (const p of parts) {
    for (const c of p.cells) {
      if (cells.has(id(c))) duplicates.push(id(c));
      else cells.set(id(c), c);
    }
  }
  const missing = matrix.filter((key) => !cells.has(key));
  const startedAt = parts.map((p) => p.startedAt).sort()[0]!;
  const finishedAt = parts
    .map((p) => p.finishedAt)
    .sort()
    .at(-1)!;
  for (const key of missing) {
    const [runtime = '', scenario = ''] = key.split('/');
    cells.set(key, {
      runtime,
      scenario,
      outcome: 'failed',
      reason: 'missing: no merged results file ran this cell (a shard did not finish?)',
      startedAt,
      durationMs: 0,
      assertions: [],
      timeline: [],
      logs: [],
    });
  }

  const order = new Map(matrix.map((key, i) => [key, i]));
  // Every shard records the whole selection's scenarios, in suite order.
  const scenarios = [
    ...new Set([
      ...parts.flatMap((p) => p.scenarios),
      ...matrix.map((key) => key.slice(key.indexOf('/') + 1)),
    ]),
  ];
  const benchmarks = parts.flatMap((p) => p.benchmarks ?? []);
  const sorted = [...cells.values()].sort((a, b) => order.get(id(a))! - order.get(id(b))!);
  return {
    results: {
      schemaVersion: RESULTS_SCHEMA_VERSION,
      runId: parts.map((p) => p.runId).join('+'),
      ...(commits.length === 1 && commits[0] !== 'unknown' ? { commit: commits[0] } : {}),
      mergedFrom: parts.map((p) => p.runId),
      startedAt,
      finishedAt,
      durationMs: Date.parse(finishedAt) - Date.parse(startedAt),
      host: parts[0]!.host,
      runtimes: withStartupTargets(mergeRuntimes(parts, matrix), sorted),
      scenarios,
      cells: sorted,
      ...(benchmarks.length > 0 ? { benchmarks } : {}),
      ...mergeCpu(parts),
    },
    duplicates,
    missing,
  };
}

/** The parts' CPU-seconds added up (each shard ran its own containers); absent unless every part has them. */
function mergeCpu(parts: readonly RunResults[]): { cpu?: RunCpu } {
  const cpus = parts.flatMap((p) => (p.cpu ? [p.cpu] : []));
  if (cpus.length !== parts.length) return {};
  const sum = (f: (c: RunCpu) => number) => roundSeconds(cpus.reduce((s, c) => s + f(c), 0));
  const hosts = cpus.flatMap((c) => (c.hostSeconds === undefined ? [] : [c.hostSeconds]));
  return {
    cpu: {
      nodes: cpus.flatMap((c) => c.nodes),
      world: cpus.flatMap((c) => c.world),
      harnessSeconds: sum((c) => c.harnessSeconds),
      totalSeconds: sum((c) => c.totalSeconds),
      ...(hosts.length === cpus.length ? { hostSeconds: sum((c) => c.hostSeconds!) } : {}),
    },
  };
}

/**
 * One entry per runtime, in matrix order. A runtime several shards ran gets the slowest start-up
 * and its CRI statistics combined: counts, errors, min and max exactly; p50/p90/p99 as the
 * highest of the parts' (an upper bound: the raw latencies are not kept).
 */
function mergeRuntimes(parts: readonly RunResults[], matrix: readonly string[]): RuntimeInfo[] {
  const byName = new Map<string, RuntimeInfo[]>();
  for (const p of parts) for (const r of p.runtimes) byName.set(r.name, [...(byName.get(r.name) ?? []), r]);
  const names = [...new Set([...matrix.map((key) => key.slice(0, key.indexOf('/'))), ...byName.keys()])];
  // The start-up target is the merged cells', set by the caller.
  return names.map((name) => {
    const infos = byName.get(name) ?? [{ name, runtimeName: name, runtimeVersion: 'unknown' }];
    const known = infos.find((r) => r.runtimeVersion !== 'unknown') ?? infos[0]!;
    const startups = infos.flatMap((r) => (r.startupMs === undefined ? [] : [r.startupMs]));
    const stats = new Map<string, CriCallStats>();
    for (const r of infos) {
      for (const c of r.criCalls ?? []) {
        const key = `${c.source}\u0000${c.method}`;
        const s = stats.get(key);
        stats.set(
          key,
          s
            ? {
                ...s,
                count: s.count + c.count,
                errors: s.errors + c.errors,
                ...mergedCodes(s.codes, c.codes),
                min: Math.min(s.min, c.min),
                p50: Math.max(s.p50, c.p50),
                p90: Math.max(s.p90, c.p90),
                p99: Math.max(s.p99, c.p99),
                max: Math.max(s.max, c.max),
              }
            : c,
        );
      }
    }
    const { criCalls: _, startupMs: __, criContract: ___, ...info } = known;
    return withCriContract({
      ...info,
      ...(startups.length > 0 ? { startupMs: Math.max(...startups) } : {}),
      ...(stats.size > 0 ? { criCalls: [...stats.values()] } : {}),
    });
  });
}

/** Both parts' failed calls by code, summed; nothing when neither has any. */
function mergedCodes(
  a: Record<string, number> | undefined,
  b: Record<string, number> | undefined,
): { codes?: Record<string, number> } {
  if (!a && !b) return {};
  const codes = { ...a };
  for (const [code, n] of Object.entries(b ?? {})) codes[code] = (codes[code] ?? 0) + n;
  return { codes };
}
