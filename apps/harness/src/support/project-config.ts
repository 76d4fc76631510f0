// kh.config.json: the project's composition of the harness. It names the modules the harness loads
// by name, as containerd's config names its plugins: the backend modules that add columns, and the
// scenario suite. The harness itself knows neither; this repository's file names
// @kh/backend-containerd-handlers and @kh/e2e.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The config file looked for in the working directory and its parents. */
export const CONFIG_FILE = 'kh.config.json';

export interface ProjectConfig {
  file: string;
  /** Backend modules, paths resolved against the file's directory. */
  backends: string[];
  /** The scenario suite module (exports `scenarios`), when the file names one. */
  suite?: string;
  /** Cells and cases whose failures do not fail the run until their expiry (results/quarantine.ts). */
  quarantine: QuarantineEntry[];
}

/**
 * A quarantined cell, or one case of it: it runs and is reported, but its failure does not fail
 * the run until the end of `expires` (UTC). `cell` is `runtime/scenario`, either part may use `*`.
 */
export interface QuarantineEntry {
  cell: string;
  /** One named case of the cell (issue 34); without it the whole cell is quarantined. */
  case?: string;
  /**
   * A regular expression: the entry holds only failures whose reason or failed assertions (what
   * was seen, as JSON) match it, so a known runtime bug is held and any other failure is not.
   */
  symptom?: string;
  owner: string;
  /** YYYY-MM-DD: the last day the quarantine holds. */
  expires: string;
  reason: string;
}

/** The nearest kh.config.json at or above `cwd`. */
export function readConfig(cwd: string): ProjectConfig | undefined {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = join(dir, CONFIG_FILE);
    if (existsSync(file)) return readConfigFile(file);
    if (dirname(dir) === dir) return undefined;
  }
}

/** A config file's modules, relative paths resolved against its directory. */
export function readConfigFile(file: string): ProjectConfig {
  let config: { backends?: unknown; suite?: unknown; quarantine?: unknown };
  try {
    config = JSON.parse(readFileSync(file, 'utf8')) as typeof config;
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
  const module = (m: string) => (m.startsWith('.') ? resolve(dirname(file), m) : m);
  const backends = config.backends ?? [];
  if (!Array.isArray(backends) || !backends.every((b) => typeof b === 'string'))
    throw new Error(`${file}: "backends" must be an array of module names`);
  if (config.suite !== undefined && (typeof config.suite !== 'string' || config.suite === ''))
    throw new Error(`${file}: "suite" must be a module name`);
  return {
    file,
    backends: backends.map(module),
    ...(config.suite ? { suite: module(config.suite) } : {}),
    quarantine: quarantineEntries(config.quarantine, file),
  };
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A real calendar day as YYYY-MM-DD (2026-02-30 is not one). */
export function isCalendarDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text);
}

function quarantineEntries(value: unknown, file: string): QuarantineEntry[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new Error(`${file}: "quarantine" must be an array of entries`);
  return value.map((raw, i) => {
    const at = `${file}: quarantine[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new Error(`${at} must be an object`);
    const e = raw as Record<string, unknown>;
    const text = (key: string) => {
      const v = e[key];
      if (typeof v !== 'string' || v.trim() === '')
        throw new Error(`${at}.${key} must be a non-empty string`);
      return v;
    };
    const cell = text('cell');
    if (!/^[^/\s]+\/[^/\s]+$/.test(cell))
      throw new Error(`${at}.cell must be runtime/scenario (either may be *), got ${JSON.stringify(cell)}`);
    const expires = text('expires');
    if (!isCalendarDate(expires))
      throw new Error(`${at}.expires must be a date, YYYY-MM-DD, got ${JSON.stringify(expires)}`);
    const entry: QuarantineEntry = { cell, owner: text('owner'), expires, reason: text('reason') };
    if (e.case !== undefined) entry.case = text('case');
    if (e.symptom !== undefined) {
      entry.symptom = text('symptom');
      try {
        new RegExp(entry.symptom);
      } catch (err) {
        throw new Error(`${at}.symptom must be a regular expression: ${(err as Error).message}`);
      }
    }
    const known = new Set(['cell', 'case', 'symptom', 'owner', 'expires', 'reason']);
    const unknown = Object.keys(e).filter((k) => !known.has(k));
    if (unknown.length > 0)
      throw new Error(`${at} has unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')}`);
    return entry;
  });
}

/** kh.config.json, or the file KH_CONFIG names; KH_CONFIG set and empty: none (hermetic tests, one-off runs). */
export function projectConfig(env: NodeJS.ProcessEnv, cwd: string): ProjectConfig | undefined {
  if (env.KH_CONFIG === undefined) return readConfig(cwd);
  return env.KH_CONFIG ? readConfigFile(resolve(cwd, env.KH_CONFIG)) : undefined;
}
