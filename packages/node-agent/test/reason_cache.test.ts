import { type PodSyncResult, SyncStepError } from '@kh/runtime-manager';
import { describe, expect, it } from 'vitest';
import { ReasonCache } from '../src/status/reason_cache.js';

const failedStart = (target: string, reason: string, message: string): PodSyncResult['steps'][number] => ({
  action: 'StartContainer',
  target,
  error: new SyncStepError(reason, message),
  reason,
  message,
});

describe('ReasonCache', () => {
  it('remembers why each container last failed to start, until a start succeeds', () => {
    const cache = new ReasonCache();
    cache.update('u1', {
      steps: [
        { action: 'CreatePodSandbox', target: 'web' },
        failedStart('app', 'ErrImagePull', 'failed to pull image "x"'),
        { ...failedStart('init', 'RunInitContainerError', 'exit 1'), action: 'InitContainer' },
        // A kill step never touches the cache, even when it failed.
        { ...failedStart('side', 'KillContainerError', 'timeout'), action: 'KillContainer' },
      ],
    });
    expect(cache.get('u1', 'app')).toEqual({ reason: 'ErrImagePull', message: 'failed to pull image "x"' });
    expect(cache.get('u1', 'init')).toEqual({ reason: 'RunInitContainerError', message: 'exit 1' });
    expect(cache.get('u1', 'side')).toBeUndefined();
    expect(cache.get('u2', 'app')).toBeUndefined(); // keyed by pod UID too

    // A later sync that does not try the container leaves its reason alone.
    cache.update('u1', { steps: [] });
    expect(cache.get('u1', 'app')?.reason).toBe('ErrImagePull');
    cache.update('u1', { steps: [failedStart('app', 'ImagePullBackOff', 'Back-off pulling image "x"')] });
    expect(cache.get('u1', 'app')?.reason).toBe('ImagePullBackOff');
    cache.update('u1', { steps: [{ action: 'StartContainer', target: 'app' }] });
    expect(cache.get('u1', 'app')).toBeUndefined();
  });

  it('keeps at most its bound, dropping the least recently used entry', () => {
    const cache = new ReasonCache(2);
    cache.update('u1', { steps: [failedStart('a', 'CrashLoopBackOff', 'back-off 10s')] });
    cache.update('u2', { steps: [failedStart('a', 'CrashLoopBackOff', 'back-off 10s')] });
    expect(cache.get('u1', 'a')).toBeDefined(); // u1 is now the most recently used
    cache.update('u3', { steps: [failedStart('a', 'CreateContainerConfigError', 'secret "s" not found')] });
    expect(cache.get('u2', 'a')).toBeUndefined();
    expect(cache.get('u1', 'a')).toBeDefined();
    expect(cache.get('u3', 'a')).toBeDefined();
  });

  it('forgets the containers of pods that are no longer desired', () => {
    const cache = new ReasonCache();
    cache.update('gone', {
      steps: [failedStart('a', 'RunContainerError', 'oci error'), failedStart('b', 'x', 'y')],
    });
    cache.update('kept', { steps: [failedStart('a', 'RunContainerError', 'oci error')] });
    cache.removeOrphaned(new Set(['kept']));
    expect(cache.get('gone', 'a')).toBeUndefined();
    expect(cache.get('gone', 'b')).toBeUndefined();
    expect(cache.get('kept', 'a')).toBeDefined();
  });
});
