// Kubernetes resource quantities -> CRI Linux resources (cpu shares/quota, memory limit).
import { Quantity } from '@kh/apimachinery';
import type { LinuxContainerResources } from '@kh/cri-api';
import type { V1Container } from '@kubernetes/client-node';

const PeriodUs = 100_000;
const MinShares = 2;

/** CPU in millicores, rounded up as the kubelet's MilliValue does; throws on a malformed quantity. */
const milli = (q: string | number): number => Number(Quantity.fromJSON(q).milliValue());

export function linuxResources(container: V1Container): LinuxContainerResources {
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const cpuReq = req.cpu ?? lim.cpu;
  const milliReq = cpuReq !== undefined ? milli(cpuReq) : 0;
  const shares = milliReq === 0 ? MinShares : Math.max(MinShares, Math.floor((milliReq * 1024) / 1000));
  const milliLim = lim.cpu !== undefined ? milli(lim.cpu) : 0;
  const quota = milliLim > 0 ? Math.max(1000, Math.floor((milliLim * PeriodUs) / 1000)) : 0;
  const mem = lim.memory !== undefined ? Quantity.fromJSON(lim.memory).value() : 0n;
  return {
    cpuPeriod: quota > 0 ? BigInt(PeriodUs) : 0n,
    cpuQuota: BigInt(quota),
    cpuShares: BigInt(shares),
    memoryLimitInBytes: mem,
    oomScoreAdj: 0n,
    cpusetCpus: '',
    cpusetMems: '',
    hugepageLimits: [],
    unified: {},
    memorySwapLimitInBytes: 0n,
  };
}
