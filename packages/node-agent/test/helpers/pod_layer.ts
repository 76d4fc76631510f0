// A pod layer under test with the agent's usual wiring: an in-memory API, a fresh pod manager, the
// kubelet's crash-loop back-off on the test's clock, node IP 10.0.0.5 and a one-minute resync.
// Tests pass what they care about (runtime, cache, admission, probing) and override the rest.
import type { TimerClock } from '@kh/apimachinery';
import { newCrashLoopBackoff } from '@kh/runtime-manager';
import { newPodLayer } from '../../src/main_kubelet.js';
import { PodManager } from '../../src/pods/pod_manager.js';
import { MemoryNodeApi } from './memory_api.js';

type LayerOptions = Parameters<typeof newPodLayer>[0];

export function testPodLayer(
  opts: Pick<LayerOptions, 'runtime' | 'podCache'> & { clock: TimerClock } & Partial<LayerOptions>,
) {
  return newPodLayer({
    api: new MemoryNodeApi(),
    pods: new PodManager(),
    backoff: newCrashLoopBackoff(opts.clock),
    nodeIP: '10.0.0.5',
    admit: { admit: () => ({ admit: true }) },
    resyncIntervalMs: 60_000,
    ...opts,
  });
}
