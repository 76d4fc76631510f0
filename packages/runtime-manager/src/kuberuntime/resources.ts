// Kubernetes resource quantities -> CRI Linux resources (cpu shares/quota, memory limit).
import type { LinuxContainerResources } from '@kh/cri-api';
import type { V1Container } from '@kubernetes/client-node';

const suffixes: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  Pi: 1024 ** 5,
  Ei: 1024 ** 6,
  m: 1e-3,
};

/** Parses a quantity such as "500m", "1.5", "64Mi", "1e3"; throws on anything else. */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^([+-]?\d*\.?\d+(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?$/.exec(q.trim());
  if (!m) throw new Error(`invalid quantity "${q}"`);
  return Number(m[1]) * (suffixes[m[2] ?? ''] ?? 1);
}

const PeriodUs = 100_000;
const MinShares = 2;

export function linuxResources(container: V1Container): LinuxContainerResources {
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const cpuReq = req.cpu ?? lim.cpu;
  const milliReq = cpuReq !== undefined ? Math.round(parseQuantity(cpuReq) * 1000) : 0;
  const shares = milliReq === 0 ? MinShares : Math.max(MinShares, Math.floor((milliReq * 1024) / 1000));
  const milliLim = lim.cpu !== undefined ? Math.round(parseQuantity(lim.cpu) * 1000) : 0;
  const quota = milliLim > 0 ? Math.max(1000, Math.floor((milliLim * PeriodUs) / 1000)) : 0;
  const mem = lim.memory !== undefined ? Math.floor(parseQuantity(lim.memory)) : 0;
  return {
    cpuPeriod: quota > 0 ? BigInt(PeriodUs) : 0n,
    cpuQuota: BigInt(quota),
    cpuShares: BigInt(shares),
    memoryLimitInBytes: BigInt(mem),
    oomScoreAdj: 0n,
    cpusetCpus: '',
    cpusetMems: '',
    hugepageLimits: [],
    unified: {},
    memorySwapLimitInBytes: 0n,
  };
}
