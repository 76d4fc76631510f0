// The validated file form turned into numbers and parsed values for the code that runs.
import { parseDuration } from '../util/duration.js';
import { parseQuantityOrPercent, Quantity, type QuantityOrPercent } from '../util/quantity.js';
import { isDisabledThreshold } from './schema.js';
import type { KubeletConfiguration } from './types.js';

/** One eviction threshold, `signal < value`, as the eviction manager consumes it. */
export interface EvictionThreshold {
  signal: string;
  operator: 'LessThan';
  value: QuantityOrPercent;
  /** 0 for hard thresholds; evictionSoftGracePeriod for soft ones. */
  gracePeriodMs: number;
  minReclaim?: QuantityOrPercent;
}

export type ResourceList = Record<string, Quantity>;

export interface ResolvedKubeletConfig {
  syncFrequencyMs: number;
  fileCheckFrequencyMs: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationMs: number;
  /** The kubelet renews its lease at a quarter of the lease duration. */
  nodeLeaseRenewIntervalMs: number;
  runtimeRequestTimeoutMs: number;
  imageMinimumGCAgeMs: number;
  imageMaximumGCAgeMs: number;
  evictionPressureTransitionPeriodMs: number;
  evictionHard: EvictionThreshold[];
  evictionSoft: EvictionThreshold[];
  kubeReserved: ResourceList;
  systemReserved: ResourceList;
  containerLogMaxSizeBytes: bigint;
  containerLogMonitorIntervalMs: number;
  authenticationCacheTtlMs: number;
  authorizedCacheTtlMs: number;
  unauthorizedCacheTtlMs: number;
}

/** Assumes `validateKubeletConfiguration(cfg)` returned no errors. */
export function resolveKubeletConfiguration(cfg: KubeletConfiguration): ResolvedKubeletConfig {
  const leaseMs = cfg.nodeLeaseDurationSeconds * 1000;
  const minReclaim = (signal: string) => {
    const v = cfg.evictionMinimumReclaim[signal];
    return v === undefined || v === '0%' ? {} : { minReclaim: parseQuantityOrPercent(v) };
  };
  const thresholds = (map: Record<string, string>, grace: Record<string, string>): EvictionThreshold[] =>
    Object.entries(map)
      .filter(([, value]) => !isDisabledThreshold(value))
      .map(([signal, value]) => ({
        signal,
        operator: 'LessThan',
        value: parseQuantityOrPercent(value),
        gracePeriodMs: grace[signal] === undefined ? 0 : parseDuration(grace[signal]),
        ...minReclaim(signal),
      }));
  const resources = (map: Record<string, string>): ResourceList =>
    Object.fromEntries(Object.entries(map).map(([k, v]) => [k, Quantity.parse(v)]));
  return {
    syncFrequencyMs: parseDuration(cfg.syncFrequency),
    fileCheckFrequencyMs: parseDuration(cfg.fileCheckFrequency),
    nodeStatusUpdateFrequencyMs: parseDuration(cfg.nodeStatusUpdateFrequency),
    nodeStatusReportFrequencyMs: parseDuration(cfg.nodeStatusReportFrequency),
    nodeLeaseDurationMs: leaseMs,
    nodeLeaseRenewIntervalMs: leaseMs / 4,
    runtimeRequestTimeoutMs: parseDuration(cfg.runtimeRequestTimeout),
    imageMinimumGCAgeMs: parseDuration(cfg.imageMinimumGCAge),
    imageMaximumGCAgeMs: parseDuration(cfg.imageMaximumGCAge),
    evictionPressureTransitionPeriodMs: parseDuration(cfg.evictionPressureTransitionPeriod),
    evictionHard: thresholds(cfg.evictionHard, {}),
    evictionSoft: thresholds(cfg.evictionSoft, cfg.evictionSoftGracePeriod),
    kubeReserved: resources(cfg.kubeReserved),
    systemReserved: resources(cfg.systemReserved),
    containerLogMaxSizeBytes: Quantity.parse(cfg.containerLogMaxSize).value(),
    containerLogMonitorIntervalMs: parseDuration(cfg.containerLogMonitorInterval),
    authenticationCacheTtlMs: parseDuration(cfg.authentication.webhook.cacheTTL),
    authorizedCacheTtlMs: parseDuration(cfg.authorization.webhook.cacheAuthorizedTTL),
    unauthorizedCacheTtlMs: parseDuration(cfg.authorization.webhook.cacheUnauthorizedTTL),
  };
}
