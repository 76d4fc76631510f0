// The backends the harness knows, as containerd knows its plugins: each module registers its
// backends when it is loaded, the built-in ones first, then the modules named by kh.config.json,
// KH_BACKENDS and --backend. The matrix, `list` and the nightly workflow all read this registry;
// nothing in the harness asks for a backend by name except the user.
import { DEFAULT_NODE_RELEASE } from '@kh/testkit';
import { moduleSpecifier } from '../support/modules.js';
import { projectConfig } from '../support/project-config.js';
import { containerdBackends } from './containerd.js';
import { dockerBackends } from './docker.js';
import { endpointBackend } from './endpoint.js';
import { fakeBackend } from './fake.js';
import type { RuntimeBackend } from './types.js';

/** What a backend module exports. */
export interface BackendModule {
  backends: readonly RuntimeBackend[];
}

/** The module name under which the harness's own backends are registered. */
export const BUILTIN_MODULE = '@kh/harness';

export interface RegisteredBackend {
  backend: RuntimeBackend;
  /** The module that registered it, as it was named. */
  module: string;
}

export class BackendRegistry {
  private readonly entries: RegisteredBackend[] = [];

  /** Adds a module's backends; a name (or alias) registered twice is an error naming both modules. */
  register(module: string, backends: readonly RuntimeBackend[]): void {
    for (const backend of backends) {
      for (const name of namesOf(backend)) {
        const taken = this.entries.find((e) => namesOf(e.backend).includes(name));
        if (taken)
          throw new Error(`backend "${name}" from ${module} is already registered by ${taken.module}`);
      }
      this.entries.push({ backend, module });
    }
  }

  /** Imports a module (package name, or a path relative to `base`) and registers its `backends`. */
  async load(spec: string, base = process.cwd()): Promise<void> {
    if (this.entries.some((e) => e.module === spec)) return;
    let mod: Partial<BackendModule>;
    try {
      mod = (await import(moduleSpecifier(spec, base))) as Partial<BackendModule>;
    } catch (err) {
      throw new Error(`cannot load backend module ${spec}: ${(err as Error).message}`, { cause: err });
    }
    if (!Array.isArray(mod.backends) || mod.backends.length === 0)
      throw new Error(`backend module ${spec} does not export \`backends\` (an array of RuntimeBackend)`);
    this.register(spec, mod.backends);
  }

  get registered(): readonly RegisteredBackend[] {
    return this.entries;
  }

  get backends(): RuntimeBackend[] {
    return this.entries.map((e) => e.backend);
  }
}

export interface BackendSources {
  /** --backend values, in order. */
  modules?: readonly string[];
  /** The endpoint backend's CRI endpoint (--cri-endpoint). */
  criEndpoint?: string;
  env?: NodeJS.ProcessEnv;
  /** Where the search for kh.config.json starts. */
  cwd?: string;
}

/** The built-in backends: real runtimes in node containers, the fake, and a CRI endpoint of the user's. */
export function builtinBackends(criEndpoint?: string): RuntimeBackend[] {
  return [...containerdBackends, ...dockerBackends, fakeBackend, endpointBackend(criEndpoint)];
}

/** The built-ins alone (no modules loaded), for tools that need no more. */
export const BACKENDS: readonly RuntimeBackend[] = builtinBackends();

/**
 * The registry for one command: the built-ins, then the modules of kh.config.json (or the file
 * KH_CONFIG names), KH_BACKENDS (comma-separated) and --backend, in that order, each loaded once.
 */
export async function loadBackends(sources: BackendSources = {}): Promise<BackendRegistry> {
  const env = sources.env ?? process.env;
  const cwd = sources.cwd ?? process.cwd();
  const registry = new BackendRegistry();
  registry.register(BUILTIN_MODULE, builtinBackends(sources.criEndpoint ?? env.KH_CRI_ENDPOINT));
  const fromEnv = (env.KH_BACKENDS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const config = projectConfig(env, cwd);
  for (const spec of [...(config?.backends ?? []), ...fromEnv, ...(sources.modules ?? [])])
    await registry.load(spec, cwd);
  return registry;
}

/** `--runtime all`: every registered column, every release (the nightly). */
export const ALL_RUNTIMES = 'all';

/** The columns a run takes without `--runtime`: the default release's, and those without a release. */
export const isDefaultColumn = (b: RuntimeBackend): boolean =>
  b.release === undefined || b.release === DEFAULT_NODE_RELEASE;

/**
 * The backends named on the command line, in registry order: by name or alias; `all` for every
 * one; the default columns when `names` is undefined.
 */
export function selectBackends(
  names: readonly string[] | undefined,
  registry: readonly RuntimeBackend[] = BACKENDS,
): RuntimeBackend[] {
  if (!names) return registry.filter(isDefaultColumn);
  if (names.includes(ALL_RUNTIMES)) return [...registry];
  const unknown = names.filter((n) => !registry.some((b) => namesOf(b).includes(n)));
  if (unknown.length > 0) {
    const known = registry.map((b) => (b.aliases?.length ? `${b.name} (${b.aliases.join(', ')})` : b.name));
    throw new Error(`unknown runtime ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${known.join(', ')}`);
  }
  return registry.filter((b) => namesOf(b).some((n) => names.includes(n)));
}

/** A backend's column name and the other names `--runtime` takes for it. */
export const namesOf = (b: RuntimeBackend): readonly string[] => [b.name, ...(b.aliases ?? [])];
