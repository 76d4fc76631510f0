import { afterEach, describe, expect, it, vi } from 'vitest';
import { criTools, criToolsDir, DEFAULT_CRI_TOOLS_DIR, DEFAULT_CRI_TOOLS_VERSION } from '../src/cri-tools.js';

// Where scripts/cri-tools.sh puts each cri-tools release, read the same way here.
describe('criToolsDir', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('puts each release in its own directory of the cache', () => {
    vi.stubEnv('KH_CRI_TOOLS_DIR', '');
    vi.stubEnv('KH_CRI_TOOLS_CACHE', '');
    expect(criToolsDir()).toBe(DEFAULT_CRI_TOOLS_DIR);
    expect(DEFAULT_CRI_TOOLS_DIR).toBe(`/var/cache/kubelet-harness/cri-tools-${DEFAULT_CRI_TOOLS_VERSION}`);
    expect(criToolsDir('1.33.0')).toBe('/var/cache/kubelet-harness/cri-tools-1.33.0');
  });

  it('KH_CRI_TOOLS_DIR names the default release only; KH_CRI_TOOLS_CACHE moves the others', () => {
    vi.stubEnv('KH_CRI_TOOLS_DIR', '/opt/judge');
    vi.stubEnv('KH_CRI_TOOLS_CACHE', '/opt/cache');
    expect(criToolsDir()).toBe('/opt/judge');
    expect(criToolsDir(DEFAULT_CRI_TOOLS_VERSION)).toBe('/opt/judge');
    expect(criToolsDir('1.33.0')).toBe('/opt/cache/cri-tools-1.33.0');
  });

  it('a missing release names the command that builds it', async () => {
    await expect(criTools('/nowhere/cri-tools-1.33.0')).rejects.toThrow(
      '/nowhere/cri-tools-1.33.0/crictl is missing: build the upstream CRI clients with `bash scripts/cri-tools.sh 1.33.0`',
    );
    await expect(criTools('/nowhere/cri-tools-1.26.0')).rejects.toThrow('`bash scripts/cri-tools.sh`');
  });
});
