// Eviction thresholds as the manager evaluates them: hard and soft thresholds from the
// configuration, resolved against each signal's capacity, and the rules that decide whether one
// is met. Parsing of the text forms lives in config/ (schema + resolve); this file adds the
// checks that need the whole eviction section and turns it into one EvictionConfig.

import { ErrorList } from '@kh/apimachinery';
import { ConfigError } from '../config/field_errors.js';
import type { EvictionThreshold, ResolvedKubeletConfig } from '../config/resolve.js';
import { ENFORCE_PODS } from '../config/schema.js';
import type { KubeletConfiguration } from '../config/types.js';
import type { QuantityOrPercent } from '../util/quantity.js';
import type { EvictionSignal, Observations } from './types.js';

export interface Threshold extends EvictionThreshold {
  signal: EvictionSignal;
  /** Hard thresholds evict at once with the minimum grace period; soft ones wait gracePeriodMs. */
  hard: boolean;
}

export interface EvictionConfig {
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  /**
   * evictionMaxPodGracePeriod: a soft eviction kills with min(this, the pod's grace period), at
   * least one second (so 0, the default, kills within a second).
   */
  maxPodGracePeriodSeconds: number;
  /** How often the manager observes signals (the kubelet's housekeeping interval, 10s). */
  monitoringIntervalMs: number;
}

export const DEFAULT_MONITORING_INTERVAL_MS = 10_000;

/**
 * Builds the manager's configuration from a validated KubeletConfiguration and its resolved
 * form. Rejects, with every problem listed, what config validation cannot see on its own:
 * a minimum reclaim for a signal without a threshold, and zero quantities that could never fire.
 */
export function evictionConfigFrom(
  cfg: KubeletConfiguration,
  resolved: Pick<
    ResolvedKubeletConfig,
    'evictionHard' | 'evictionSoft' | 'evictionPressureTransitionPeriodMs'
  >,
  monitoringIntervalMs = DEFAULT_MONITORING_INTERVAL_MS,
): EvictionConfig {
  const errs = new ErrorList();
  for (const signal of Object.keys(cfg.evictionMinimumReclaim)) {
    if (!(signal in cfg.evictionHard) && !(signal in cfg.evictionSoft)) {
      errs.invalid(
        `evictionMinimumReclaim[${signal}]`,
        cfg.evictionMinimumReclaim[signal],
        'has no matching evictionHard or evictionSoft threshold',
      );
    }
  }
  const check = (field: string, list: EvictionThreshold[]) => {
    for (const t of list) {
      if ('quantity' in t.value && t.value.quantity.milliValue() <= 0n)
        errs.invalid(`${field}[${t.signal}]`, t.value.quantity.toString(), 'must be positive');
    }
  };
  check('evictionHard', resolved.evictionHard);
  check('evictionSoft', resolved.evictionSoft);
  if (errs.errors.length > 0) throw new ConfigError('eviction configuration', errs.errors);
  // With `pods` enforced, each hard memory.available threshold also applies to what is left of
  // node allocatable in kubepods (the kubelet's addAllocatableThresholds).
  const allocatable = cfg.enforceNodeAllocatable.includes(ENFORCE_PODS)
    ? resolved.evictionHard.filter((t) => t.signal === 'memory.available')
    : [];
  return {
    thresholds: [
      ...resolved.evictionHard.map((t) => ({ ...t, signal: t.signal as EvictionSignal, hard: true })),
      ...allocatable.map((t) => ({ ...t, signal: 'allocatableMemory.available' as const, hard: true })),
      ...resolved.evictionSoft.map((t) => ({ ...t, signal: t.signal as EvictionSignal, hard: false })),
    ],
    pressureTransitionPeriodMs: resolved.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: cfg.evictionMaxPodGracePeriod,
    monitoringIntervalMs,
  };
}

/** An absolute amount from a quantity or a percentage of capacity (the kubelet truncates). */
export function thresholdAmount(value: QuantityOrPercent, capacity: number): number {
  if ('percentage' in value) return Math.floor(capacity * value.percentage);
  return Number(value.quantity.value());
}

/**
 * The thresholds whose signal is below its value. With enforceMinReclaim, a threshold stays met
 * until the signal has recovered past value + minimum reclaim, so the node is not left hovering
 * just above the line.
 */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: Observations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const obs = observations[t.signal];
    if (!obs) return false;
    let amount = thresholdAmount(t.value, obs.capacity);
    if (enforceMinReclaim && t.minReclaim) amount += thresholdAmount(t.minReclaim, obs.capacity);
    return obs.available < amount;
  });
}

/** Same signal, same hardness: the identity the first-observed bookkeeping is keyed by. */
export function thresholdKey(t: Pick<Threshold, 'signal' | 'hard'>): string {
  return `${t.signal}/${t.hard ? 'hard' : 'soft'}`;
}

export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const out = new Map<string, Threshold>();
  for (const t of [...a, ...b]) out.set(thresholdKey(t), t);
  return [...out.values()];
}
