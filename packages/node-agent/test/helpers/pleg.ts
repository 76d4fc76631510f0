// The PLEG side of a pod layer under test. Pod workers wait on the pod cache for a status newer
// than their last pass, so something must keep refreshing it, as the agent's PLEG does.
import type { Clock } from '@kh/apimachinery';
import { GenericPLEG, PodCache, type Runtime } from '@kh/runtime-manager';
import type { PodLayer } from '../../src/main_kubelet.js';

/**
 * A pod cache kept fresh as a relisting PLEG keeps it over a runtime that changes only when the
 * test says so: its global timestamp moves on every millisecond of real time, and the test writes
 * pods' statuses into it as the PLEG would. stop() ends the refreshing.
 */
export function relistingPodCache(clock: Clock): { cache: PodCache; stop(): void } {
  const cache = new PodCache(clock);
  cache.updateTime(cache.now());
  const timer = setInterval(() => cache.updateTime(cache.now()), 1);
  return { cache, stop: () => clearInterval(timer) };
}

/**
 * The agent's PLEG over a real runtime manager, wired to a pod layer as Kubelet.run wires it: it
 * feeds the layer's pod cache, and its events reach the pod lifecycle. Drive it with relist(), or
 * start() it to relist every `relistPeriodMs` of real time.
 */
export function podLayerPleg(
  runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>,
  layer: () => PodLayer,
  opts: { clock: Clock; cache: PodCache; relistPeriodMs?: number },
): GenericPLEG {
  const pleg = new GenericPLEG(runtime, opts);
  pleg.watch((e) => void layer().lifecycle.handlePlegEvent(e));
  return pleg;
}
