// The benchmarks' history: figures read from the bench JSON files under <package>/.reports/bench/,
// one series per benchmark and figure, drawn on the history page.
//
// The contract (what the performance issue's trend writes, one record per bench run; a .json file
// holds one record, a .jsonl file one per line):
//   { "benchmark": "dockershim-pod-lifecycle", "at": "2026-11-28T03:00:00Z", "commit": "<sha>",
//     "figures": [ { "name": "RunPodSandbox shim/direct p50", "value": 1.12, "unit": "×",
//                    "target": 1.5, "met": true } ] }
// `commit`, `unit`, `target` and `met` are optional. The bench files written today have no
// `figures`; from them every object holding a boolean `met` is a figure (each bench's targets):
// its value is the first number among figure, measured, valueMs, value, ratio and share, its
// target the first among target, targetMs, targetRatio, targetShare, max and limit, and its name
// the path to it (an array item is named by its runtime, name or label, else its index; a string
// `figure` names the figure itself). The run's time is `at`, else `date`, else the file's mtime;
// the benchmark is `benchmark`, else `label`, else the file name without its timestamp.
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { BenchPoint, BenchSeries, HistoryAlert, HistorySettings } from './model.js';

export interface BenchFigure {
  name: string;
  value: number;
  unit?: string;
  target?: number;
  met?: boolean;
}

/** One bench run, as the contract above has it. */
export interface BenchRecord {
  benchmark: string;
  at: string;
  commit?: string;
  figures: BenchFigure[];
  source: string;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const firstNumber = (o: Json, keys: readonly string[]) => {
  for (const k of keys) if (typeof o[k] === 'number' && Number.isFinite(o[k])) return { key: k, value: o[k] };
  return undefined;
};
const VALUE_KEYS = ['figure', 'measured', 'valueMs', 'value', 'ratio', 'share'] as const;
const TARGET_KEYS = ['target', 'targetMs', 'targetRatio', 'targetShare', 'max', 'limit'] as const;

/** Figures of a bench file without `figures`: every object with a boolean `met` (see above). */
export function legacyFigures(data: unknown): BenchFigure[] {
  const out: BenchFigure[] = [];
  const walk = (v: unknown, path: string[]) => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        const label = isObject(item)
          ? [item.runtime, item.name, item.label].find((x) => typeof x === 'string')
          : undefined;
        walk(item, [...path, (label as string | undefined) ?? `#${i + 1}`]);
      });
      return;
    }
    if (!isObject(v)) return;
    const value = firstNumber(v, VALUE_KEYS);
    if (typeof v.met === 'boolean' && value) {
      const target = firstNumber(v, TARGET_KEYS);
      const unit = typeof v.unit === 'string' ? v.unit : value.key.endsWith('Ms') ? 'ms' : undefined;
      out.push({
        name: typeof v.figure === 'string' ? v.figure : path.join(' · '),
        value: value.value,
        met: v.met,
        ...(target ? { target: target.value } : {}),
        ...(unit ? { unit } : {}),
      });
      return;
    }
    for (const [k, child] of Object.entries(v)) walk(child, [...path, k]);
  };
  walk(data, []);
  return out;
}

const contractFigures = (figures: unknown[], source: string): BenchFigure[] =>
  figures.map((f, i) => {
    const at = `${source}: figures[${i}]`;
    if (
      !isObject(f) ||
      typeof f.name !== 'string' ||
      typeof f.value !== 'number' ||
      !Number.isFinite(f.value)
    )
      throw new Error(`${at} needs a name (string) and a value (number)`);
    return {
      name: f.name,
      value: f.value,
      ...(typeof f.unit === 'string' ? { unit: f.unit } : {}),
      ...(typeof f.target === 'number' ? { target: f.target } : {}),
      ...(typeof f.met === 'boolean' ? { met: f.met } : {}),
    };
  });

/** One bench run's record from its parsed JSON (`fallbackAt`: the file's mtime). */
export function benchRecord(data: unknown, source: string, fallbackAt: Date): BenchRecord {
  if (!isObject(data)) throw new Error(`${source}: a bench record must be a JSON object`);
  const name = [data.benchmark, data.label].find((x) => typeof x === 'string') as string | undefined;
  const at = [data.at, data.date].find((x) => typeof x === 'string' && !Number.isNaN(Date.parse(x))) as
    | string
    | undefined;
  return {
    benchmark:
      name ??
      basename(source)
        .replace(/\.jsonl?$/, '')
        .replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, ''),
    at: at ?? fallbackAt.toISOString(),
    ...(typeof data.commit === 'string' ? { commit: data.commit } : {}),
    figures: Array.isArray(data.figures) ? contractFigures(data.figures, source) : legacyFigures(data),
    source,
  };
}

/** `latest.json` and `<bench>-latest.json` copy a timestamped file beside them. */
const isBenchFile = (name: string) => /\.jsonl?$/.test(name) && !/(^|-)latest\.json$/.test(name);

/** The bench records in files and directories (every bench file below a directory). */
export async function readBenchRecords(paths: readonly string[]): Promise<BenchRecord[]> {
  const files: string[] = [];
  for (const p of paths) {
    const info = await stat(p).catch(() => undefined);
    if (!info) throw new Error(`${p}: no such file or directory`);
    if (!info.isDirectory()) {
      files.push(p);
      continue;
    }
    const entries = await readdir(p, { recursive: true, withFileTypes: true });
    files.push(
      ...entries
        .filter((e) => e.isFile() && isBenchFile(e.name))
        .map((e) => join(e.parentPath, e.name))
        .sort(),
    );
  }
  const records: BenchRecord[] = [];
  for (const file of files) {
    const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    const docs = file.endsWith('.jsonl')
      ? text.split('\n').flatMap((line, i) => (line.trim() ? [{ line, at: `${file}:${i + 1}` }] : []))
      : [{ line: text, at: file }];
    for (const { line, at } of docs) {
      let data: unknown;
      try {
        data = JSON.parse(line);
      } catch (err) {
        throw new Error(`${at}: not valid JSON (${(err as Error).message})`);
      }
      records.push(benchRecord(data, at, info.mtime));
    }
  }
  return records;
}

/** One series per benchmark and figure, points oldest first; the same run read twice counts once. */
export function benchSeries(
  records: readonly BenchRecord[],
  earlier: readonly BenchSeries[] = [],
): BenchSeries[] {
  const series = new Map<string, BenchSeries>();
  const add = (benchmark: string, figure: string, unit: string | undefined, point: BenchPoint) => {
    const key = JSON.stringify([benchmark, figure]);
    let s = series.get(key);
    if (!s) {
      s = { benchmark, figure, ...(unit ? { unit } : {}), points: [] };
      series.set(key, s);
    }
    if (!s.points.some((p) => p.at === point.at)) s.points.push(point);
  };
  for (const s of earlier) for (const p of s.points) add(s.benchmark, s.figure, s.unit, p);
  for (const r of records)
    for (const f of r.figures)
      add(r.benchmark, f.name, f.unit, {
        at: r.at,
        value: f.value,
        ...(f.target !== undefined ? { target: f.target } : {}),
        ...(f.met !== undefined ? { met: f.met } : {}),
        ...(r.commit ? { commit: r.commit } : {}),
        source: r.source,
      });
  return [...series.values()]
    .map((s) => ({ ...s, points: s.points.sort((a, b) => Date.parse(a.at) - Date.parse(b.at)) }))
    .sort((a, b) => a.benchmark.localeCompare(b.benchmark) || a.figure.localeCompare(b.figure));
}

/** The earlier runs a figure's newest point is compared with (the performance issue's "last five"). */
export const BENCH_WINDOW = 5;

/**
 * Whether a lower value is the better one, from the series' own targets: a point under its target
 * that met it (or over it that missed) says lower is better. Undefined when no point says: such a
 * figure has no direction to regress in.
 */
export function lowerIsBetter(series: BenchSeries): boolean | undefined {
  for (const p of [...series.points].reverse())
    if (p.target !== undefined && p.met !== undefined && p.value !== p.target)
      return p.value < p.target === p.met;
  return undefined;
}

export interface BenchRegression {
  benchmark: string;
  figure: string;
  unit?: string;
  value: number;
  /** The median of the `window` points before the newest. */
  median: number;
  window: number;
  /** How much worse than the median, as a fraction of it. */
  worse: number;
}

const median = (values: readonly number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * The figures whose newest point is more than `threshold` (a fraction) worse than the median of the
 * `window` points before it. A figure with fewer earlier points than the window, a zero median or
 * no direction (lowerIsBetter) is not judged.
 */
export function benchRegressions(
  series: readonly BenchSeries[],
  threshold: number,
  window = BENCH_WINDOW,
): BenchRegression[] {
  const out: BenchRegression[] = [];
  for (const s of series) {
    const lower = lowerIsBetter(s);
    if (lower === undefined || s.points.length < window + 1) continue;
    const newest = s.points[s.points.length - 1]!;
    const base = median(s.points.slice(-window - 1, -1).map((p) => p.value));
    if (base === 0) continue;
    const worse = (lower ? newest.value - base : base - newest.value) / Math.abs(base);
    if (worse > threshold)
      out.push({
        benchmark: s.benchmark,
        figure: s.figure,
        ...(s.unit ? { unit: s.unit } : {}),
        value: newest.value,
        median: base,
        window,
        worse,
      });
  }
  return out;
}

const pct = (f: number) => `${Math.round(f * 100)}%`;

/** The alert `--bench-regression` raises, or undefined when no figure regressed. */
export function benchRegressionAlert(
  series: readonly BenchSeries[],
  settings: Pick<HistorySettings, 'benchRegression' | 'benchWindow'>,
): HistoryAlert | undefined {
  if (settings.benchRegression === undefined) return undefined;
  const found = benchRegressions(series, settings.benchRegression, settings.benchWindow);
  if (found.length === 0) return undefined;
  const unit = (r: BenchRegression) => (r.unit ? ` ${r.unit}` : '');
  return {
    kind: 'bench-regression',
    message: `${found.length} bench ${found.length === 1 ? 'figure is' : 'figures are'} more than ${pct(settings.benchRegression)} worse than the median of ${found[0]!.window} runs before: ${found
      .map(
        (r) =>
          `${r.benchmark} · ${r.figure} ${r.value}${unit(r)} (median ${r.median}${unit(r)}, ${pct(r.worse)} worse)`,
      )
      .join('; ')}`,
  };
}
