/**
 * Where tools built outside the project tree are cached (cri-tools, the images' Go programs), unless
 * KH_CRI_TOOLS_CACHE says otherwise. scripts/cri-tools.sh uses the same default and variable.
 */
export const CACHE_ROOT = '/var/cache/kubelet-harness';

export const cacheRoot = (): string => process.env.KH_CRI_TOOLS_CACHE || CACHE_ROOT;
