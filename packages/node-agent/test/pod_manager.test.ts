// What the pod manager lets garbage collection remove of a pod the kubelet killed: an evicted
// pod's content goes once it is terminated; a pod killed for node shutdown (Failed, Terminated)
// keeps it, as the kubelet only removes the content of reason Evicted.
import { describe, expect, it } from 'vitest';
import { evictionStatus, terminationByKubeletStatus } from '../src/eviction/messages.js';
import { PodManager } from '../src/pods/pod_manager.js';

describe('PodManager.shouldPodContentBeRemoved', () => {
  const pm = (status: ReturnType<typeof evictionStatus>) => {
    const pods = new PodManager();
    pods.setPod({ metadata: { name: 'a', uid: 'a' } });
    pods.markEvicted('a', status);
    return pods;
  };

  it('removes an evicted pod once terminated', () => {
    const pods = pm(evictionStatus('The node was low on resource: memory. '));
    expect(pods.shouldPodContentBeRemoved('a')).toBe(false);
    pods.markTerminated('a');
    expect(pods.shouldPodContentBeRemoved('a')).toBe(true);
  });

  it('keeps the content of a pod terminated for node shutdown, with its status', () => {
    const status = terminationByKubeletStatus(
      'Terminated',
      'Pod was terminated in response to imminent node shutdown.',
    );
    const pods = pm(status);
    pods.markTerminated('a');
    expect(pods.shouldPodContentBeRemoved('a')).toBe(false);
    expect(pods.shouldPodRuntimeBeRemoved('a')).toBe(true);
    expect(pods.evictionStatus('a')).toEqual(status);
  });
});
