import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { type CriContractStatus, RESULTS_SCHEMA_VERSION, type RunResults, STARTUP_STAGES } from './model.js';

/** A results file that cannot be read or does not match the results model. */
export class ResultsFileError extends Error {
  override name = 'ResultsFileError';
}

const OUTCOMES = new Set(['passed', 'failed', 'skipped']);
const CRI_CALL_SOURCES = new Set(['agent', 'harness']);
const CONTRACT_STATUSES: ReadonlySet<string> = new Set<CriContractStatus>([
  'called',
  'unimplemented',
  'not-called',
]);
const TIMELINE_KINDS = new Set([
  'pod-phase',
  'container-state',
  'node-condition',
  'event',
  'cri-call',
  'note',
]);

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks the parts of a results file the report relies on, and names the first offending field,
 * so a truncated or hand-edited file is rejected with a message instead of a blank page.
 */
export function validateResults(data: unknown, source = 'results'): RunResults {
  function fail(path: string, what: string): never {
    throw new ResultsFileError(`${source}: ${path} ${what}`);
  }
  function object(v: unknown, path: string): Json {
    if (!isObject(v)) fail(path, 'must be an object');
    return v;
  }
  function array(o: Json, key: string, path: string): unknown[] {
    const v = o[key];
    if (!Array.isArray(v)) fail(`${path}.${key}`, 'must be an array');
    return v;
  }
  const str = (o: Json, key: string, path: string) => {
    if (typeof o[key] !== 'string') fail(`${path}.${key}`, 'must be a string');
  };
  const num = (o: Json, key: string, path: string) => {
    if (typeof o[key] !== 'number' || !Number.isFinite(o[key])) fail(`${path}.${key}`, 'must be a number');
  };

  const top = object(data, 'top level');
  if (top.schemaVersion !== RESULTS_SCHEMA_VERSION) {
    fail('$.schemaVersion', `must be ${RESULTS_SCHEMA_VERSION}, got ${JSON.stringify(top.schemaVersion)}`);
  }
  for (const key of ['runId', 'startedAt', 'finishedAt']) str(top, key, '$');
  num(top, 'durationMs', '$');
  object(top.host, '$.host');
  const criCalls = (o: Json, path: string) => {
    if (o.criCalls === undefined) return;
    for (const [j, c] of array(o, 'criCalls', path).entries()) {
      const at = `${path}.criCalls[${j}]`;
      const stats = object(c, at);
      if (!CRI_CALL_SOURCES.has(stats.source as string)) fail(`${at}.source`, 'must be agent or harness');
      str(stats, 'method', at);
      for (const key of ['count', 'errors', 'min', 'p50', 'p90', 'p99', 'max']) num(stats, key, at);
      codes(stats, at);
    }
  };
  function codes(o: Json, path: string) {
    if (o.codes === undefined) return;
    const c = object(o.codes, `${path}.codes`);
    for (const key of Object.keys(c)) num(c, key, `${path}.codes`);
  }
  const criContract = (o: Json, path: string) => {
    if (o.criContract === undefined) return;
    for (const [j, r] of array(o, 'criContract', path).entries()) {
      const at = `${path}.criContract[${j}]`;
      const row = object(r, at);
      str(row, 'method', at);
      if (!CONTRACT_STATUSES.has(row.status as string))
        fail(`${at}.status`, 'must be called, unimplemented or not-called');
      num(row, 'count', at);
      codes(row, at);
    }
  };
  const percentiles = (v: unknown, path: string) => {
    const o = object(v, path);
    for (const key of ['p50', 'p90', 'p99']) num(o, key, path);
    return o;
  };
  // What cells and their cases may carry beside the outcome: tries and the quarantine that held them.
  const outcomeExtras = (o: Json, path: string) => {
    if (o.attempts !== undefined) num(o, 'attempts', path);
    if (o.quarantine === undefined) return;
    const q = object(o.quarantine, `${path}.quarantine`);
    for (const key of ['owner', 'expires', 'reason']) str(q, key, `${path}.quarantine`);
  };
  const stageNames = new Set<string>(STARTUP_STAGES);
  const breakdown = (v: unknown, path: string) => {
    const b = object(v, path);
    num(b, 'pods', path);
    num(b, 'incomplete', path);
    percentiles(b.total, `${path}.total`);
    const stages = array(b, 'stages', path);
    for (const [j, st] of stages.entries()) {
      const at = `${path}.stages[${j}]`;
      if (!stageNames.has(percentiles(st, at).stage as string))
        fail(`${at}.stage`, 'is not a start-up stage');
    }
    if (b.perPod === undefined) return;
    for (const [j, row] of array(b, 'perPod', path).entries()) {
      const at = `${path}.perPod[${j}]`;
      const r = object(row, at);
      str(r, 'pod', at);
      num(r, 'totalMs', at);
      const ms = r.stagesMs;
      if (!(Array.isArray(ms) && ms.length === STARTUP_STAGES.length && ms.every(Number.isFinite)))
        fail(`${at}.stagesMs`, `must be ${STARTUP_STAGES.length} numbers`);
    }
  };
  for (const [i, r] of array(top, 'runtimes', '$').entries()) {
    const path = `$.runtimes[${i}]`;
    const runtime = object(r, path);
    for (const key of ['name', 'runtimeName', 'runtimeVersion']) str(runtime, key, path);
    if (runtime.nodeImage !== undefined) {
      const image = object(runtime.nodeImage, `${path}.nodeImage`);
      for (const key of ['ref', 'release']) str(image, key, `${path}.nodeImage`);
      const packages = object(image.packages, `${path}.nodeImage.packages`);
      for (const key of Object.keys(packages)) str(packages, key, `${path}.nodeImage.packages`);
    }
    if (runtime.warnings !== undefined) {
      for (const [j, w] of array(runtime, 'warnings', path).entries())
        if (typeof w !== 'string') fail(`${path}.warnings[${j}]`, 'must be a string');
    }
    criCalls(runtime, path);
    criContract(runtime, path);
    if (runtime.startupTarget !== undefined) {
      const target = object(runtime.startupTarget, `${path}.startupTarget`);
      for (const key of ['p50Ms', 'floorMs', 'ratio', 'limit']) num(target, key, `${path}.startupTarget`);
      if (typeof target.met !== 'boolean') fail(`${path}.startupTarget.met`, 'must be a boolean');
    }
  }
  for (const [i, sc] of array(top, 'scenarios', '$').entries()) {
    if (typeof sc !== 'string') fail(`$.scenarios[${i}]`, 'must be a string');
  }
  // A cell's assertions, and a case's own.
  function assertions(o: Json, path: string) {
    for (const [j, a] of array(o, 'assertions', path).entries()) {
      const assertion = object(a, `${path}.assertions[${j}]`);
      str(assertion, 'name', `${path}.assertions[${j}]`);
      if (!OUTCOMES.has(assertion.outcome as string))
        fail(`${path}.assertions[${j}].outcome`, 'is not an outcome');
    }
  }
  const seen = new Set<string>();
  for (const [i, c] of array(top, 'cells', '$').entries()) {
    const path = `$.cells[${i}]`;
    const cell = object(c, path);
    str(cell, 'runtime', path);
    str(cell, 'scenario', path);
    if (cell.node !== undefined) str(cell, 'node', path);
    if (!OUTCOMES.has(cell.outcome as string)) fail(`${path}.outcome`, 'must be passed, failed or skipped');
    num(cell, 'durationMs', path);
    const id = `${cell.runtime}/${cell.scenario}`;
    if (seen.has(id)) fail(path, `repeats the cell ${id}`);
    seen.add(id);
    assertions(cell, path);
    for (const [j, e] of array(cell, 'timeline', path).entries()) {
      const at = `${path}.timeline[${j}]`;
      const entry = object(e, at);
      num(entry, 't', at);
      str(entry, 'summary', at);
      if (!TIMELINE_KINDS.has(entry.kind as string)) {
        fail(`${at}.kind`, `is not a timeline kind: ${JSON.stringify(entry.kind)}`);
      }
      if (entry.source !== undefined && !CRI_CALL_SOURCES.has(entry.source as string))
        fail(`${at}.source`, 'must be agent or harness');
    }
    for (const [j, l] of array(cell, 'logs', path).entries()) {
      if (!Array.isArray(object(l, `${path}.logs[${j}]`).lines))
        fail(`${path}.logs[${j}].lines`, 'must be an array');
    }
    criCalls(cell, path);
    outcomeExtras(cell, path);
    if (cell.cases !== undefined) {
      for (const [j, k] of array(cell, 'cases', path).entries()) {
        const at = `${path}.cases[${j}]`;
        const item = object(k, at);
        str(item, 'name', at);
        if (!OUTCOMES.has(item.outcome as string)) fail(`${at}.outcome`, 'must be passed, failed or skipped');
        if (item.durationMs !== undefined) num(item, 'durationMs', at);
        if (item.offsetMs !== undefined) num(item, 'offsetMs', at);
        if (item.file !== undefined) str(item, 'file', at);
        for (const key of ['tags', 'pods'])
          if (item[key] !== undefined && !array(item, key, at).every((t) => typeof t === 'string'))
            fail(`${at}.${key}`, 'must be an array of strings');
        if (item.assertions !== undefined) assertions(item, at);
        outcomeExtras(item, at);
      }
    }
    const startup = cell.podStartupMs;
    if (startup !== undefined && !(Array.isArray(startup) && startup.every(Number.isFinite))) {
      fail(`${path}.podStartupMs`, 'must be an array of numbers');
    }
    if (cell.startupBreakdown !== undefined) breakdown(cell.startupBreakdown, `${path}.startupBreakdown`);
    if (cell.cpu !== undefined) {
      const cpu = object(cell.cpu, `${path}.cpu`);
      for (const key of ['nodeSeconds', 'hostSeconds'])
        if (cpu[key] !== undefined) num(cpu, key, `${path}.cpu`);
    }
    if (cell.startupFloor !== undefined) {
      const floor = object(cell.startupFloor, `${path}.startupFloor`);
      num(floor, 'singleMs', `${path}.startupFloor`);
      if (floor.burst !== undefined)
        num(percentiles(floor.burst, `${path}.startupFloor.burst`), 'pods', `${path}.startupFloor.burst`);
    }
  }
  if (top.commit !== undefined) str(top, 'commit', '$');
  if (top.cpu !== undefined) {
    const cpu = object(top.cpu, '$.cpu');
    for (const key of ['harnessSeconds', 'totalSeconds']) num(cpu, key, '$.cpu');
    for (const key of ['nodes', 'world'])
      for (const [i, c] of array(cpu, key, '$.cpu').entries()) {
        const at = `$.cpu.${key}[${i}]`;
        str(object(c, at), 'name', at);
        num(c as Json, 'seconds', at);
      }
  }
  if (top.shard !== undefined) {
    const shard = object(top.shard, '$.shard');
    num(shard, 'index', '$.shard');
    num(shard, 'total', '$.shard');
    for (const key of ['cells', 'matrix']) {
      if (!array(shard, key, '$.shard').every((c) => typeof c === 'string'))
        fail(`$.shard.${key}`, 'must be an array of strings');
    }
  }
  if (top.benchmarks !== undefined) {
    for (const [i, b] of array(top, 'benchmarks', '$').entries()) {
      const bench = object(b, `$.benchmarks[${i}]`);
      str(bench, 'name', `$.benchmarks[${i}]`);
      object(bench.metrics, `$.benchmarks[${i}].metrics`);
    }
  }
  return top as unknown as RunResults;
}

/** A file as is; a directory: every results.json below it outside node_modules (CI artifacts unpack into folders, and a checkout holds one), in name order. */
export async function resultsFilesUnder(path: string): Promise<string[]> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new ResultsFileError(`${path}: no such file or directory`);
  if (!info.isDirectory()) return [path];
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  // vitest's cache in a checkout writes a results.json of its own under node_modules.
  return entries
    .filter((e) => e.isFile() && e.name === 'results.json')
    .map((e) => join(e.parentPath, e.name))
    .filter((file) => !relative(path, file).split(sep).includes('node_modules'))
    .sort();
}

/** A results file, or a directory holding exactly one (a downloaded baseline artifact). */
export async function readResultsPath(path: string): Promise<RunResults> {
  const files = await resultsFilesUnder(path);
  if (files.length !== 1)
    throw new ResultsFileError(
      files.length === 0
        ? `${path}: no results.json in this directory`
        : `${path}: ${files.length} results.json files in this directory (${files.join(', ')}); name one`,
    );
  return readResultsFile(files[0]!);
}

export async function readResultsFile(path: string): Promise<RunResults> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ResultsFileError(
      code === 'ENOENT'
        ? `${path}: no such file (run the harness first, or pass --input)`
        : `${path}: ${String(err)}`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ResultsFileError(`${path}: not valid JSON (${(err as Error).message})`);
  }
  return validateResults(data, path);
}
