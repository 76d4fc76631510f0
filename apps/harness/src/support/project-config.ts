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
  let config: { backends?: unknown; suite?: unknown };
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
  return { file, backends: backends.map(module), ...(config.suite ? { suite: module(config.suite) } : {}) };
}

/** kh.config.json, or the file KH_CONFIG names; KH_CONFIG set and empty: none (hermetic tests, one-off runs). */
export function projectConfig(env: NodeJS.ProcessEnv, cwd: string): ProjectConfig | undefined {
  if (env.KH_CONFIG === undefined) return readConfig(cwd);
  return env.KH_CONFIG ? readConfigFile(resolve(cwd, env.KH_CONFIG)) : undefined;
}
