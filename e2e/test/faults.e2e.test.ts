// The fault scenarios' verdicts on what the runtime holds, on made-up CRI lists: a leak or a
// double start must be named, a restart count that grew without a death must be caught.
import type { CriItem } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { containerView, reconcile, restartViolations } from '../src/support/faults.js';

const pod = (name: string, uid: string, status: V1Pod['status'] = {}): V1Pod => ({
  metadata: { name, uid },
  spec: { containers: [{ name: 'c' }] },
  status,
});
const item = (id: string, podName: string, uid: string, state: string, container?: string): CriItem => ({
  id,
  state,
  createdAt: 0,
  labels: {
    'io.kubernetes.pod.name': podName,
    'io.kubernetes.pod.uid': uid,
    ...(container ? { 'io.kubernetes.container.name': container } : {}),
  },
});
const running = (id: string, restartCount: number, lastState = {}) => ({
  containerStatuses: [
    {
      name: 'c',
      image: 'x',
      imageID: 'x',
      ready: true,
      restartCount,
      containerID: `containerd://${id}`,
      state: { running: {} },
      lastState,
    },
  ],
});

describe('reconcile', () => {
  const pods = new Map([
    ['a', pod('a', 'uid-a')],
    ['b', pod('b', 'uid-b')],
  ]);

  it('is empty when each pod runs once; dead leftovers are GC’s, not leaks', () => {
    const held = {
      sandboxes: [
        item('s1', 'a', 'uid-a', 'ready'),
        item('s2', 'b', 'uid-b', 'ready'),
        item('s0', 'a', 'uid-a', 'notready'),
      ],
      containers: [
        item('c1', 'a', 'uid-a', 'running', 'c'),
        item('c2', 'b', 'uid-b', 'running', 'c'),
        item('c0', 'gone', 'uid-gone', 'exited', 'c'),
      ],
    };
    expect(reconcile(pods, held)).toEqual({
      unowned: [],
      readySandboxesNotOne: [],
      runningContainersNotOne: [],
    });
  });

  it('names what runs for no pod, a second ready sandbox and a missing container', () => {
    const held = {
      sandboxes: [
        item('s1', 'a', 'uid-a', 'ready'),
        item('s3', 'a', 'uid-a', 'ready'),
        item('s2', 'b', 'uid-b', 'ready'),
        item('sx', 'old', 'uid-old', 'ready'),
      ],
      containers: [item('c1', 'a', 'uid-a', 'running', 'c')],
    };
    expect(reconcile(pods, held)).toEqual({
      unowned: ['old:sx:ready'],
      readySandboxesNotOne: ['a: 2'],
      runningContainersNotOne: ['b/c: 0'],
    });
  });
});

describe('restartViolations', () => {
  const before = containerView(new Map([['a', pod('a', 'uid-a', running('c1', 0))]]));

  it('accepts the same instance with the same count, and a replaced one that shows its death', () => {
    const same = new Map([['a', pod('a', 'uid-a', running('c1', 0))]]);
    expect(
      restartViolations(before, same, { sandboxes: [], containers: [item('c1', 'a', 'uid-a', 'running')] }),
    ).toEqual([]);
    const replaced = new Map([['a', pod('a', 'uid-a', running('c2', 1, { terminated: { exitCode: 137 } }))]]);
    expect(
      restartViolations(before, replaced, {
        sandboxes: [],
        containers: [item('c2', 'a', 'uid-a', 'running')],
      }),
    ).toEqual([]);
  });

  it('catches a count that grew on an instance that never died, and a replacement without a death', () => {
    const grew = new Map([['a', pod('a', 'uid-a', running('c1', 1))]]);
    expect(
      restartViolations(before, grew, { sandboxes: [], containers: [item('c1', 'a', 'uid-a', 'running')] }),
    ).toEqual(['a/c: still the same instance, restartCount 0 -> 1']);
    const silent = new Map([['a', pod('a', 'uid-a', running('c2', 0))]]);
    expect(
      restartViolations(before, silent, { sandboxes: [], containers: [item('c2', 'a', 'uid-a', 'running')] }),
    ).toHaveLength(1);
  });
});
