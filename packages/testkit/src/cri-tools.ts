import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';

/** Where `scripts/cri-tools.sh` caches crictl and critest v1.26.0 unless KH_CRI_TOOLS_DIR says otherwise. */
export const DEFAULT_CRI_TOOLS_DIR = '/var/cache/kubelet-harness/cri-tools-1.26.0';

export interface CriTools {
  dir: string;
  /** Upstream crictl: the Go CRI client kubelet users know, a judge nobody here wrote. */
  crictl: string;
  /** Upstream critest: the CRI validation suite (a compiled ginkgo test binary). */
  critest: string;
}

/**
 * Locates the upstream Go CRI clients. They are built outside the tree by `bash scripts/cri-tools.sh`
 * (which `scripts/prepare.sh` runs), so a missing binary is a set-up error, said as such.
 */
export async function criTools(
  dir = process.env.KH_CRI_TOOLS_DIR || DEFAULT_CRI_TOOLS_DIR,
): Promise<CriTools> {
  const tools = { dir, crictl: join(dir, 'crictl'), critest: join(dir, 'critest') };
  for (const path of [tools.crictl, tools.critest]) {
    try {
      await access(path, constants.X_OK);
    } catch {
      throw new Error(
        `${path} is missing: build the upstream CRI clients with \`bash scripts/cri-tools.sh\``,
      );
    }
  }
  return tools;
}
