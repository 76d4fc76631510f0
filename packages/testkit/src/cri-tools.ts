import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { CACHE_ROOT, cacheRoot } from './util/cache-dir.js';

/** The cri-tools release the tests judge with, unless they name another (scripts/cri-tools.sh's default). */
export const DEFAULT_CRI_TOOLS_VERSION = '1.26.0';
/** Where `scripts/cri-tools.sh` caches `cri-tools-<version>/`, unless KH_CRI_TOOLS_CACHE says otherwise. */
export const CRI_TOOLS_CACHE = CACHE_ROOT;
/** The default version's directory, unless KH_CRI_TOOLS_DIR says otherwise. */
export const DEFAULT_CRI_TOOLS_DIR = join(CRI_TOOLS_CACHE, `cri-tools-${DEFAULT_CRI_TOOLS_VERSION}`);

/**
 * Where `bash scripts/cri-tools.sh <version>` puts crictl and critest: KH_CRI_TOOLS_DIR for the
 * default version (what the set-up exports), else `<KH_CRI_TOOLS_CACHE>/cri-tools-<version>`.
 */
export function criToolsDir(version = DEFAULT_CRI_TOOLS_VERSION): string {
  if (version === DEFAULT_CRI_TOOLS_VERSION && process.env.KH_CRI_TOOLS_DIR)
    return process.env.KH_CRI_TOOLS_DIR;
  return join(cacheRoot(), `cri-tools-${version}`);
}

export interface CriTools {
  dir: string;
  /** Upstream crictl: the Go CRI client kubelet users know, a judge nobody here wrote. */
  crictl: string;
  /** Upstream critest: the CRI validation suite (a compiled ginkgo test binary). */
  critest: string;
}

/**
 * Locates the upstream Go CRI clients. They are built outside the tree by `bash scripts/cri-tools.sh
 * [version]` (which `scripts/prepare.sh` runs), so a missing binary is a set-up error, said as such.
 */
export async function criTools(dir = criToolsDir()): Promise<CriTools> {
  const tools = { dir, crictl: join(dir, 'crictl'), critest: join(dir, 'critest') };
  const version = /cri-tools-(\d+\.\d+\.\d+)$/.exec(dir)?.[1];
  const build = `bash scripts/cri-tools.sh${version && version !== DEFAULT_CRI_TOOLS_VERSION ? ` ${version}` : ''}`;
  for (const path of [tools.crictl, tools.critest]) {
    try {
      await access(path, constants.X_OK);
    } catch {
      throw new Error(`${path} is missing: build the upstream CRI clients with \`${build}\``);
    }
  }
  return tools;
}
